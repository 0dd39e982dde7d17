package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/config"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/store"
)

// PolicyFile is the document `trovesnap policy create --file` reads (JSON
// or YAML). Unknown fields are refused.
type PolicyFile struct {
	Name         string                  `json:"name"`
	TenantID     string                  `json:"tenant_id"`
	CreatedBy    string                  `json:"created_by"`
	AllowedTools []string                `json:"allowed_tools"`
	Scope        domain.PolicyScope      `json:"scope"`
	Conditions   domain.PolicyConditions `json:"conditions"`
	Limits       domain.PolicyLimits     `json:"limits"`
}

// readPolicyFile parses JSON, or YAML converted to JSON, strictly.
func readPolicyFile(path string) (PolicyFile, error) {
	var pf PolicyFile
	raw, err := os.ReadFile(path)
	if err != nil {
		return pf, usageError{fmt.Errorf("--file: %w", err)}
	}
	if len(raw) > 64<<10 {
		return pf, usageError{fmt.Errorf("--file: larger than 64 KiB")}
	}
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".yaml" || ext == ".yml" {
		var v any
		if err := yaml.Unmarshal(raw, &v); err != nil {
			return pf, usageError{fmt.Errorf("--file: not valid YAML: %w", err)}
		}
		if raw, err = json.Marshal(v); err != nil {
			return pf, usageError{fmt.Errorf("--file: YAML with non-string keys: %w", err)}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pf); err != nil {
		return pf, usageError{fmt.Errorf("--file: %w", err)}
	}
	return pf, nil
}

func newPolicyCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "policy", Short: "Tenant automation policies (seller-side; disabled when created; no MCP tool can create or widen one)"}
	var file, by string
	create := &cobra.Command{
		Use:   "create --file POLICY.json|yaml",
		Short: "Create a policy from a file; it starts disabled",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usageError{fmt.Errorf("--file is required")}
			}
			pf, err := readPolicyFile(file)
			if err != nil {
				return err
			}
			pol := domain.Policy{Name: pf.Name, TenantID: pf.TenantID, CreatedBy: pf.CreatedBy, AllowedTools: pf.AllowedTools,
				Scope: pf.Scope, Conditions: pf.Conditions, Limits: pf.Limits}
			if err := approval.ValidatePolicy(pol); err != nil {
				return adminError(err)
			}
			return withStore(cmd, f, func(_ config.Config, st *store.Store) error {
				p, err := st.CreatePolicy(cmd.Context(), pol)
				if err != nil {
					return adminError(err)
				}
				_, err = fmt.Fprintf(f.IO.Out, "created %s %q v%d (disabled: enable it with `trovesnap policy enable %s --by USER`)\n", p.ID, p.Name, p.Version, p.ID)
				return err
			})
		},
	}
	create.Flags().StringVar(&file, "file", "", "policy document (.json, .yaml or .yml)")
	var tenant string
	var asJSON bool
	list := &cobra.Command{
		Use:   "list --tenant T",
		Short: "List a tenant's policies",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tenant == "" {
				return usageError{fmt.Errorf("--tenant is required")}
			}
			return withStore(cmd, f, func(_ config.Config, st *store.Store) error {
				ps, err := st.ListPolicies(cmd.Context(), tenant)
				if err != nil {
					return err
				}
				if asJSON {
					return writeJSON(f.IO.Out, ps)
				}
				tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tNAME\tVERSION\tSTATUS\tTOOLS\tSALES\tITEMS/RUN\tDAILY")
				for _, p := range ps {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d\t%d\n", p.ID, p.Name, p.Version, p.Status, strings.Join(p.AllowedTools, ","),
						strings.Join(p.Scope.EstateSaleIDs, ","), p.Conditions.MaxItemsPerRun, p.Limits.MaxDailyActions)
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().StringVar(&tenant, "tenant", "", "tenant id")
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	var showJSON bool
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show a policy",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return withStore(cmd, f, func(_ config.Config, st *store.Store) error {
				p, err := st.GetPolicy(cmd.Context(), a[0])
				if err != nil {
					return adminError(err)
				}
				if showJSON {
					return writeJSON(f.IO.Out, p)
				}
				w := f.IO.Out
				fmt.Fprintf(w, "%s %q v%d %s (tenant %s, created by %s)\n", p.ID, p.Name, p.Version, p.Status, p.TenantID, p.CreatedBy)
				fmt.Fprintf(w, "  tools %s · sales %s\n", strings.Join(p.AllowedTools, ","), strings.Join(p.Scope.EstateSaleIDs, ","))
				_, err = fmt.Fprintf(w, "  ≤ %d items per run · fields %s · no conflicts %v · ≤ %d actions/day · $%.2f/day\n",
					p.Conditions.MaxItemsPerRun, strings.Join(p.Conditions.PermittedFields, ","), p.Conditions.RequireNoConflicts, p.Limits.MaxDailyActions, p.Limits.MaxCostUSDPerDay)
				return err
			})
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print JSON")
	cmd.AddCommand(create, list, show)
	for _, st := range []struct{ use, short, status string }{
		{"enable ID", "Enable a policy (a new version)", domain.PolicyActive},
		{"disable ID", "Disable a policy (a new version)", domain.PolicyDisabled},
		{"revoke ID", "Revoke a policy for good: it can never authorise again", domain.PolicyRevoked},
	} {
		status := st.status
		c := &cobra.Command{
			Use: st.use, Short: st.short, Args: args(cobra.ExactArgs(1)),
			RunE: func(cmd *cobra.Command, a []string) error {
				if by == "" {
					return usageError{fmt.Errorf("--by USER is required (the member taking the action, recorded in the audit log)")}
				}
				return withStore(cmd, f, func(_ config.Config, s *store.Store) error {
					p, err := s.SetPolicyStatus(cmd.Context(), a[0], status, by)
					if err != nil {
						return adminError(err)
					}
					_, err = fmt.Fprintf(f.IO.Out, "%s is now %s (v%d)\n", p.ID, p.Status, p.Version)
					return err
				})
			},
		}
		c.Flags().StringVar(&by, "by", "", "the member taking the action")
		cmd.AddCommand(c)
	}
	return cmd
}
