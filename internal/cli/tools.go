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
		row := ToolRow{Definition: t.Definition, InputSchemaHash: t.InputSchemaHash(), OutputSchemaHash: t.OutputSchemaHash()}
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

// LimitsShowOptions are the options of `limits show`.
type LimitsShowOptions struct {
	DB             string
	Tenant, Client string
	JSON           bool
}

// LimitsSetOptions are the options of `limits set`. Only the values whose
// flag was given (Changed) replace the current ones.
type LimitsSetOptions struct {
	DB                                                                          string
	Tenant, Client                                                              string
	Reads, CandidateWrites, Proposals, ControlledActions, BulkTargets, Rejected int
	PaidUSDPerDay                                                               float64
	Candidates                                                                  int
	CandidateBytes                                                              int64
	PassphraseStdin                                                             bool
	// Changed reports whether the flag of that name was given.
	Changed func(name string) bool
}

func newLimitsCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "limits", Short: "Rate and cost limits per tenant or client (spec §38), and the tenant's candidate quota"}
	so := &LimitsShowOptions{}
	show := &cobra.Command{
		Use:   "show",
		Short: "Show the effective limits of a tenant or client",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			so.DB = dbFlag(cmd)
			return limitsShowRun(cmd.Context(), f, so)
		},
	}
	o := &LimitsSetOptions{}
	set := &cobra.Command{
		Use:   "set",
		Short: "Set limits for a tenant (or, with --client, one client); unspecified values keep their current value",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.DB = dbFlag(cmd)
			o.Changed = cmd.Flags().Changed
			return limitsSetRun(cmd.Context(), f, o)
		},
	}
	show.Flags().StringVar(&so.Tenant, "tenant", "", "tenant id")
	show.Flags().StringVar(&so.Client, "client", "", "client id (default: the tenant's default limits)")
	set.Flags().StringVar(&o.Tenant, "tenant", "", "tenant id")
	set.Flags().StringVar(&o.Client, "client", "", "client id (default: the tenant's default limits)")
	show.Flags().BoolVar(&so.JSON, "json", false, "print JSON")
	set.Flags().IntVar(&o.Reads, "reads", 0, "read calls per minute")
	set.Flags().IntVar(&o.CandidateWrites, "candidate-writes", 0, "candidate writes per minute")
	set.Flags().IntVar(&o.Proposals, "proposals", 0, "proposals per minute")
	set.Flags().IntVar(&o.ControlledActions, "controlled-actions", 0, "controlled actions per minute")
	set.Flags().IntVar(&o.BulkTargets, "bulk-targets", 0, "maximum targets of a bulk action")
	set.Flags().Float64Var(&o.PaidUSDPerDay, "paid-usd-per-day", 0, "maximum paid cost per day in USD")
	set.Flags().IntVar(&o.Candidates, "candidates", 0, "tenant quota: maximum open (in review) candidates")
	set.Flags().Int64Var(&o.CandidateBytes, "candidate-bytes", 0, "tenant quota: maximum stored candidate-tier bytes (candidates, source records, media)")
	set.Flags().BoolVar(&o.PassphraseStdin, "passphrase-stdin", false, "raising a limit: read the seller's approval passphrase from the first line of standard input")
	set.Flags().IntVar(&o.Rejected, "rejected", 0, "refused calls per minute (0: the default, 120)")
	cmd.AddCommand(show, set)
	return cmd
}

func limitsShowRun(ctx context.Context, f *Factory, o *LimitsShowOptions) error {
	if o.Tenant == "" {
		return usageError{fmt.Errorf("--tenant is required")}
	}
	return withClientAdmin(ctx, f, o.DB, func(_ config.Config, a domain.ClientAdmin) error {
		l, err := a.EffectiveLimits(ctx, o.Tenant, o.Client)
		if err != nil {
			return clientError(err)
		}
		if o.JSON {
			return writeJSON(f.IO.Out, l)
		}
		_, err = fmt.Fprintf(f.IO.Out, "reads/min %d · candidate writes/min %d · proposals/min %d · controlled actions/min %d · bulk targets %d · paid $%.2f/day · refused calls/min %d\n"+
			"tenant quota: open candidates %d · candidate bytes %d\n",
			l.ReadsPerMinute, l.CandidateWritesPerMinute, l.ProposalsPerMinute, l.ControlledActionsPerMinute, l.MaxBulkTargets, l.MaxDailyPaidCostUSD,
			l.PerMinute(domain.LimitRejected), l.MaxOpenCandidates, l.MaxCandidateBytes)
		return err
	})
}

func limitsSetRun(ctx context.Context, f *Factory, o *LimitsSetOptions) error {
	if o.Tenant == "" {
		return usageError{fmt.Errorf("--tenant is required")}
	}
	if o.Client != "" && (o.Changed("candidates") || o.Changed("candidate-bytes")) {
		return usageError{fmt.Errorf("--candidates and --candidate-bytes are the tenant's quota: drop --client")}
	}
	if (o.Changed("candidates") && o.Candidates < 1) || (o.Changed("candidate-bytes") && o.CandidateBytes < 1) {
		return usageError{fmt.Errorf("--candidates and --candidate-bytes must be at least 1")}
	}
	// NaN or Inf would parse as a float, compare false with every
	// cost (so no budget at all) and not even count as a raise.
	if o.Changed("paid-usd-per-day") && !domain.ValidUSD(o.PaidUSDPerDay) {
		return usageError{fmt.Errorf("--paid-usd-per-day must be a finite amount of at least 0, not %v", o.PaidUSDPerDay)}
	}
	return withClientAdmin(ctx, f, o.DB, func(cfg config.Config, a domain.ClientAdmin) error {
		l, err := a.EffectiveLimits(ctx, o.Tenant, o.Client)
		if err != nil {
			return clientError(err)
		}
		cur := l
		for name, set := range map[string]struct {
			dst *int
			v   int
		}{"reads": {&l.ReadsPerMinute, o.Reads}, "candidate-writes": {&l.CandidateWritesPerMinute, o.CandidateWrites},
			"proposals": {&l.ProposalsPerMinute, o.Proposals}, "controlled-actions": {&l.ControlledActionsPerMinute, o.ControlledActions},
			"bulk-targets": {&l.MaxBulkTargets, o.BulkTargets}, "rejected": {&l.RejectedPerMinute, o.Rejected}} {
			if o.Changed(name) {
				*set.dst = set.v
			}
		}
		if o.Changed("paid-usd-per-day") {
			l.MaxDailyPaidCostUSD = o.PaidUSDPerDay
		}
		if o.Changed("candidates") {
			l.MaxOpenCandidates = o.Candidates
		}
		if o.Changed("candidate-bytes") {
			l.MaxCandidateBytes = o.CandidateBytes
		}
		if raised := cur.Raises(l); len(raised) > 0 { // raising widens authority; lowering needs nothing
			g := sellerGate{Command: "limits set (raising " + strings.Join(raised, ", ") + ")", Tenant: o.Tenant, Stdin: o.PassphraseStdin}
			if _, err := authorizeFor(ctx, f, cfg, a, g); err != nil {
				return err
			}
		}
		if err := a.SetLimits(ctx, o.Tenant, o.Client, l); err != nil {
			return clientError(err)
		}
		_, err = fmt.Fprintln(f.IO.Out, "limits updated")
		return err
	})
}
