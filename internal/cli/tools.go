package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/config"
	"github.com/triunalabs/trovesnap/internal/domain"
)

// ToolRow is one line of `trovesnap tools list --json`.
type ToolRow struct {
	catalog.Definition
	InputSchemaHash  string            `json:"input_schema_hash"`
	OutputSchemaHash string            `json:"output_schema_hash"`
	Decision         *catalog.Decision `json:"decision,omitempty"`
}

// ToolsListOutput is the --json output of `tools list`.
type ToolsListOutput struct {
	Mode      string            `json:"mode"`
	Principal *domain.Principal `json:"principal,omitempty"`
	Tools     []ToolRow         `json:"tools"`
}

// ToolsListOptions are the options of `tools list`.
type ToolsListOptions struct {
	DB   string
	As   string // a client id: explain what it sees and why
	JSON bool
}

func newToolsCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "tools", Short: "The tool catalog"}
	o := &ToolsListOptions{}
	list := &cobra.Command{
		Use:   "list",
		Short: "Print the tool registry; with --as CLIENT, what that client sees and why",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.DB = dbFlag(cmd)
			return toolsListRun(cmd.Context(), f, o)
		},
	}
	list.Flags().StringVar(&o.As, "as", "", "explain visibility for this client id")
	list.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	cmd.AddCommand(list)
	return cmd
}

func toolsListRun(ctx context.Context, f *Factory, o *ToolsListOptions) error {
	cfg, err := f.Config(o.DB)
	if err != nil {
		return err
	}
	out := ToolsListOutput{Mode: string(cfg.Mode)}
	if o.As != "" {
		err := withClientAdmin(ctx, f, o.DB, func(_ config.Config, a domain.ClientAdmin) error {
			p, err := a.PrincipalForClient(ctx, o.As)
			if err != nil {
				return clientError(err)
			}
			out.Principal = &p
			return nil
		})
		if err != nil {
			return err
		}
	}
	for i := range catalog.All() {
		t := &catalog.All()[i]
		row := ToolRow{Definition: t.Definition, InputSchemaHash: t.InputSchemaHash, OutputSchemaHash: t.OutputSchemaHash}
		if out.Principal != nil {
			d := catalog.Decide(t, cfg.Mode, *out.Principal)
			row.Decision = &d
		}
		out.Tools = append(out.Tools, row)
	}
	if o.JSON {
		return writeJSON(f.IO.Out, out)
	}
	w := f.IO.Out
	if p := out.Principal; p != nil {
		role := p.Role
		if role == "" {
			role = "no membership"
		}
		fmt.Fprintf(w, "As %s (%s, status %s): actor %s in %s, role %s, groups %s; %s mode\n\n",
			p.Client.ID, p.Client.Name, p.ClientStatus, p.ActorID, p.TenantID, role, strings.Join(p.AllowedToolGroups, ","), cfg.Mode)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if out.Principal != nil {
		fmt.Fprintln(tw, "TOOL\tVERSION\tTIER\tVISIBLE\tWHY")
	} else {
		fmt.Fprintln(tw, "TOOL\tVERSION\tTIER\tRISK\tSTATUS\tAPPROVAL\tPERMISSIONS")
	}
	visible := 0
	for _, r := range out.Tools {
		if r.Decision != nil {
			v := "no"
			if r.Decision.Visible {
				v = "yes"
				visible++
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, r.Version, r.Tier, v, r.Decision.Reason)
			continue
		}
		perms := strings.Join(r.Permissions, ",")
		if len(r.AnyPermissions) > 0 {
			perms = "any of " + strings.Join(r.AnyPermissions, "|")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Version, r.Tier, r.Risk, r.Status, r.Approval, perms)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if out.Principal != nil {
		_, err = fmt.Fprintf(w, "\n%d of %d tools visible\n", visible, len(out.Tools))
	} else {
		_, err = fmt.Fprintf(w, "\n%d tools\n", len(out.Tools))
	}
	return err
}

func newLimitsCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "limits", Short: "Rate and cost limits per tenant or client (spec §38), and the tenant's candidate quota"}
	var tenant, client string
	var asJSON bool
	show := &cobra.Command{
		Use:   "show",
		Short: "Show the effective limits of a tenant or client",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tenant == "" {
				return usageError{fmt.Errorf("--tenant is required")}
			}
			return withClientAdmin(cmd.Context(), f, dbFlag(cmd), func(_ config.Config, a domain.ClientAdmin) error {
				l, err := a.EffectiveLimits(cmd.Context(), tenant, client)
				if err != nil {
					return clientError(err)
				}
				if asJSON {
					return writeJSON(f.IO.Out, l)
				}
				_, err = fmt.Fprintf(f.IO.Out, "reads/min %d · candidate writes/min %d · proposals/min %d · controlled actions/min %d · bulk targets %d · paid $%.2f/day · refused calls/min %d\n"+
					"tenant quota: open candidates %d · candidate bytes %d\n",
					l.ReadsPerMinute, l.CandidateWritesPerMinute, l.ProposalsPerMinute, l.ControlledActionsPerMinute, l.MaxBulkTargets, l.MaxDailyPaidCostUSD,
					l.PerMinute(domain.LimitRejected), l.MaxOpenCandidates, l.MaxCandidateBytes)
				return err
			})
		},
	}
	var reads, cand, props, ctrl, bulk, rejected int
	var limitsPassStdin bool
	var paid float64
	var quotaCands int
	var quotaBytes int64
	set := &cobra.Command{
		Use:   "set",
		Short: "Set limits for a tenant (or, with --client, one client); unspecified values keep their current value",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tenant == "" {
				return usageError{fmt.Errorf("--tenant is required")}
			}
			fl := cmd.Flags()
			if client != "" && (fl.Changed("candidates") || fl.Changed("candidate-bytes")) {
				return usageError{fmt.Errorf("--candidates and --candidate-bytes are the tenant's quota: drop --client")}
			}
			if (fl.Changed("candidates") && quotaCands < 1) || (fl.Changed("candidate-bytes") && quotaBytes < 1) {
				return usageError{fmt.Errorf("--candidates and --candidate-bytes must be at least 1")}
			}
			// NaN or Inf would parse as a float, compare false with every
			// cost (so no budget at all) and not even count as a raise.
			if fl.Changed("paid-usd-per-day") && !domain.ValidUSD(paid) {
				return usageError{fmt.Errorf("--paid-usd-per-day must be a finite amount of at least 0, not %v", paid)}
			}
			return withClientAdmin(cmd.Context(), f, dbFlag(cmd), func(cfg config.Config, a domain.ClientAdmin) error {
				l, err := a.EffectiveLimits(cmd.Context(), tenant, client)
				if err != nil {
					return clientError(err)
				}
				cur := l
				for name, dst := range map[string]*int{"reads": &l.ReadsPerMinute, "candidate-writes": &l.CandidateWritesPerMinute,
					"proposals": &l.ProposalsPerMinute, "controlled-actions": &l.ControlledActionsPerMinute, "bulk-targets": &l.MaxBulkTargets,
					"rejected": &l.RejectedPerMinute} {
					if fl.Changed(name) {
						v, _ := fl.GetInt(name)
						*dst = v
					}
				}
				if fl.Changed("paid-usd-per-day") {
					l.MaxDailyPaidCostUSD = paid
				}
				if fl.Changed("candidates") {
					l.MaxOpenCandidates = quotaCands
				}
				if fl.Changed("candidate-bytes") {
					l.MaxCandidateBytes = quotaBytes
				}
				if raised := cur.Raises(l); len(raised) > 0 { // raising widens authority; lowering needs nothing
					g := sellerGate{Command: "limits set (raising " + strings.Join(raised, ", ") + ")", Tenant: tenant, Stdin: limitsPassStdin}
					if _, err := authorizeFor(cmd.Context(), f, cfg, a, g); err != nil {
						return err
					}
				}
				if err := a.SetLimits(cmd.Context(), tenant, client, l); err != nil {
					return clientError(err)
				}
				_, err = fmt.Fprintln(f.IO.Out, "limits updated")
				return err
			})
		},
	}
	for _, c := range []*cobra.Command{show, set} {
		c.Flags().StringVar(&tenant, "tenant", "", "tenant id")
		c.Flags().StringVar(&client, "client", "", "client id (default: the tenant's default limits)")
	}
	show.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	set.Flags().IntVar(&reads, "reads", 0, "read calls per minute")
	set.Flags().IntVar(&cand, "candidate-writes", 0, "candidate writes per minute")
	set.Flags().IntVar(&props, "proposals", 0, "proposals per minute")
	set.Flags().IntVar(&ctrl, "controlled-actions", 0, "controlled actions per minute")
	set.Flags().IntVar(&bulk, "bulk-targets", 0, "maximum targets of a bulk action")
	set.Flags().Float64Var(&paid, "paid-usd-per-day", 0, "maximum paid cost per day in USD")
	set.Flags().IntVar(&quotaCands, "candidates", 0, "tenant quota: maximum open (in review) candidates")
	set.Flags().Int64Var(&quotaBytes, "candidate-bytes", 0, "tenant quota: maximum stored candidate-tier bytes (candidates, source records, media)")
	set.Flags().BoolVar(&limitsPassStdin, "passphrase-stdin", false, "raising a limit: read the seller's approval passphrase from the first line of standard input")
	set.Flags().IntVar(&rejected, "rejected", 0, "refused calls per minute (0: the default, 120)")
	cmd.AddCommand(show, set)
	return cmd
}
