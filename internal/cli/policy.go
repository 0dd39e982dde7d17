package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/triunalabs/trovesnap/internal/approval"
	"github.com/triunalabs/trovesnap/internal/config"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
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

// maxPolicyFile bounds a policy document: the file, and a YAML document
// once its aliases are expanded (a YAML "billion laughs" is 64 KiB of text
// that would expand to gigabytes of JSON).
const maxPolicyFile = 64 << 10

// readPolicyFile parses JSON, or YAML converted to JSON, strictly.
func readPolicyFile(path string) (PolicyFile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return PolicyFile{}, usageError{fmt.Errorf("--file: %w", err)}
	}
	defer fh.Close()
	raw, err := io.ReadAll(io.LimitReader(fh, maxPolicyFile+1))
	if err != nil {
		return PolicyFile{}, usageError{fmt.Errorf("--file: %w", err)}
	}
	ext := strings.ToLower(filepath.Ext(path))
	return parsePolicyFile(raw, ext == ".yaml" || ext == ".yml")
}

// parsePolicyFile parses a policy document: one JSON object with no unknown
// field and nothing after it, or YAML whose alias-expanded size stays
// within maxPolicyFile, converted to JSON and read the same way.
func parsePolicyFile(raw []byte, isYAML bool) (PolicyFile, error) {
	var pf PolicyFile
	if len(raw) > maxPolicyFile {
		return pf, usageError{fmt.Errorf("--file: larger than 64 KiB")}
	}
	if isYAML {
		var doc yaml.Node
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			return pf, usageError{fmt.Errorf("--file: not valid YAML: %w", err)}
		}
		if yamlExpandedSize(&doc, map[*yaml.Node]int{}) > maxPolicyFile {
			return pf, usageError{fmt.Errorf("--file: the YAML expands beyond 64 KiB (anchors and aliases): write it out")}
		}
		var v any
		if err := doc.Decode(&v); err != nil {
			return pf, usageError{fmt.Errorf("--file: not valid YAML: %w", err)}
		}
		var err error
		if raw, err = json.Marshal(v); err != nil {
			return pf, usageError{fmt.Errorf("--file: YAML with non-string keys: %w", err)}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pf); err != nil {
		return pf, usageError{fmt.Errorf("--file: %w", err)}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) { // dec.More() misses a stray ] or }
		return pf, usageError{fmt.Errorf("--file: trailing data after the policy object")}
	}
	return pf, nil
}

// yamlExpandedSize is the size of n with every alias expanded, saturated
// just above maxPolicyFile; a node that contains itself counts as too big.
// memo holds each node's size (-1 while it is being sized).
func yamlExpandedSize(n *yaml.Node, memo map[*yaml.Node]int) int {
	if n == nil {
		return 0
	}
	if s, ok := memo[n]; ok {
		if s < 0 {
			return maxPolicyFile + 1
		}
		return s
	}
	memo[n] = -1
	size := len(n.Value) + len(n.Tag) + 2
	if n.Kind == yaml.AliasNode {
		size += yamlExpandedSize(n.Alias, memo)
	}
	for _, c := range n.Content {
		if size > maxPolicyFile {
			break
		}
		size += yamlExpandedSize(c, memo)
	}
	size = min(size, maxPolicyFile+1)
	memo[n] = size
	return size
}

// policyAdmin is what the policy commands act through: the embedded store
// in mock mode, the signed-in seller (`trovesnap login`) in live mode.
type policyAdmin interface {
	CreatePolicy(ctx context.Context, pol domain.Policy) (domain.Policy, error)
	ListPolicies(ctx context.Context, tenantID string) ([]domain.Policy, error)
	GetPolicy(ctx context.Context, id string) (domain.Policy, error)
	SetPolicyStatus(ctx context.Context, id, status, actorID string) (domain.Policy, error)
}

// withPolicyAdmin runs fn with the policy surface of the configured mode.
// In live mode who is the signed-in seller: the project's seller RPCs
// decide, under the user's own token, and the user is the only actor; in
// mock mode who is nil. With a gate (a command that widens authority) the
// agent-shell tripwire and the seller's passphrase come first; owner is
// the passphrase's owner in mock mode, the user the command acts as.
func withPolicyAdmin(ctx context.Context, f *Factory, db string, gate *sellerGate, fn func(a policyAdmin, who *live.SellerIdentity, owner string) error) error {
	cfg, err := f.Config(db)
	if err != nil {
		return err
	}
	if cfg.Mode != domain.ModeLive {
		return withConfiguredStore(ctx, f, cfg, func(_ config.Config, st *store.Store) error {
			var owner string
			if gate != nil {
				if owner, err = authorize(ctx, f, cfg, st, *gate); err != nil {
					return err
				}
			}
			return fn(st, nil, owner)
		})
	}
	if gate != nil {
		if err := refuseAgentShell(ctx, f, cfg, nil, *gate); err != nil {
			return err
		}
	}
	s, err := f.OpenSeller(ctx, cfg)
	if err != nil {
		return err
	}
	who, err := s.WhoAmI(ctx)
	if err != nil {
		return err
	}
	if gate != nil {
		for _, c := range gate.Claims { // said before the passphrase is asked
			if _, err := liveActor(&who, c.flag, c.value); err != nil {
				return err
			}
		}
		if _, err := authorize(ctx, f, cfg, nil, *gate); err != nil {
			return err
		}
	}
	return fn(s, &who, "")
}

// liveTenant is the tenant a live command acts in: the flag's, or the
// signed-in user's only one.
func liveTenant(who *live.SellerIdentity, tenant string) (string, error) {
	m, err := who.Membership(tenant)
	if err != nil {
		return "", usageError{err}
	}
	return m.TenantID, nil
}

// liveActor is the actor of a live command: the signed-in user; a flag may
// only repeat it.
func liveActor(who *live.SellerIdentity, flag, given string) (string, error) {
	if given != "" && given != who.UserID {
		return "", usageError{fmt.Errorf("%s %s: in live mode you act as the signed-in user %s; sign in as another user with `trovesnap login`", flag, given, who.UserID)}
	}
	return who.UserID, nil
}

// PolicyCreateOptions are the options of `policy create`.
type PolicyCreateOptions struct {
	DB              string
	File            string
	PassphraseStdin bool
}

// PolicyListOptions are the options of `policy list`.
type PolicyListOptions struct {
	DB     string
	Tenant string
	JSON   bool
}

// PolicyShowOptions are the options of `policy show`.
type PolicyShowOptions struct {
	DB   string
	ID   string
	JSON bool
}

// PolicyStatusOptions are the options of `policy enable|disable|revoke`.
type PolicyStatusOptions struct {
	DB              string
	ID              string
	Status          string // the status the command sets
	By              string
	PassphraseStdin bool
}

func newPolicyCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "policy", Short: "Tenant automation policies (seller-side; disabled when created; no MCP tool can create or widen one)"}
	co := &PolicyCreateOptions{}
	create := &cobra.Command{
		Use:   "create --file POLICY.json|yaml",
		Short: "Create a policy from a file; it starts disabled",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			co.DB = dbFlag(cmd)
			return policyCreateRun(cmd.Context(), f, co)
		},
	}
	create.Flags().StringVar(&co.File, "file", "", "policy document (.json, .yaml or .yml); created_by may only name the passphrase's owner (mock) or the signed-in user (live)")
	create.Flags().BoolVar(&co.PassphraseStdin, "passphrase-stdin", false, "read the seller's approval passphrase from the first line of standard input (for provisioning scripts)")
	lo := &PolicyListOptions{}
	list := &cobra.Command{
		Use:   "list --tenant T",
		Short: "List a tenant's policies",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			lo.DB = dbFlag(cmd)
			return policyListRun(cmd.Context(), f, lo)
		},
	}
	list.Flags().StringVar(&lo.Tenant, "tenant", "", "tenant id (live mode: default the signed-in user's tenant)")
	list.Flags().BoolVar(&lo.JSON, "json", false, "print JSON")
	so := &PolicyShowOptions{}
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show a policy",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			so.DB, so.ID = dbFlag(cmd), a[0]
			return policyShowRun(cmd.Context(), f, so)
		},
	}
	show.Flags().BoolVar(&so.JSON, "json", false, "print JSON")
	cmd.AddCommand(create, list, show)
	for _, st := range []struct{ use, short, status string }{
		{"enable ID", "Enable a policy (a new version); asks for the seller's approval passphrase", domain.PolicyActive},
		{"disable ID", "Disable a policy (a new version)", domain.PolicyDisabled},
		{"revoke ID", "Revoke a policy for good: it can never authorise again", domain.PolicyRevoked},
	} {
		o := &PolicyStatusOptions{Status: st.status}
		widens := st.status == domain.PolicyActive // disabling and revoking narrow authority: no passphrase
		c := &cobra.Command{
			Use: st.use, Short: st.short, Args: args(cobra.ExactArgs(1)),
			RunE: func(cmd *cobra.Command, a []string) error {
				o.DB, o.ID = dbFlag(cmd), a[0]
				return policyStatusRun(cmd.Context(), f, o)
			},
		}
		if widens {
			c.Flags().StringVar(&o.By, "by", "", "the member taking the action: the passphrase's owner (mock mode) or the signed-in user (live mode), the default; no one else")
			c.Flags().BoolVar(&o.PassphraseStdin, "passphrase-stdin", false, "read the seller's approval passphrase from the first line of standard input (for provisioning scripts)")
		} else {
			c.Flags().StringVar(&o.By, "by", "", "the member taking the action (live mode: the signed-in user, the default)")
		}
		cmd.AddCommand(c)
	}
	return cmd
}

func policyCreateRun(ctx context.Context, f *Factory, o *PolicyCreateOptions) error {
	if o.File == "" {
		return usageError{fmt.Errorf("--file is required")}
	}
	pf, err := readPolicyFile(o.File)
	if err != nil {
		return err
	}
	pol := domain.Policy{Name: pf.Name, TenantID: pf.TenantID, CreatedBy: pf.CreatedBy, AllowedTools: pf.AllowedTools,
		Scope: pf.Scope, Conditions: pf.Conditions, Limits: pf.Limits}
	if err := approval.ValidatePolicy(pol); err != nil {
		return adminError(err)
	}
	gate := &sellerGate{Command: "policy create", Tenant: pol.TenantID, Stdin: o.PassphraseStdin, Claims: []claim{{"created_by", pol.CreatedBy}}}
	return withPolicyAdmin(ctx, f, o.DB, gate, func(a policyAdmin, who *live.SellerIdentity, owner string) error {
		enable := "`trovesnap policy enable %s`"
		if pol.CreatedBy == "" {
			pol.CreatedBy = owner // mock mode: the passphrase's owner creates it
		}
		if who != nil {
			if pol.TenantID, err = liveTenant(who, pol.TenantID); err != nil {
				return err
			}
			if pol.CreatedBy, err = liveActor(who, "created_by", pol.CreatedBy); err != nil {
				return err
			}
		}
		p, err := a.CreatePolicy(ctx, pol)
		if err != nil {
			return adminError(err)
		}
		_, err = fmt.Fprintf(f.IO.Out, "created %s %q v%d (disabled: enable it with "+enable+")\n", p.ID, p.Name, p.Version, p.ID)
		return err
	})
}

func policyListRun(ctx context.Context, f *Factory, o *PolicyListOptions) error {
	return withPolicyAdmin(ctx, f, o.DB, nil, func(a policyAdmin, who *live.SellerIdentity, _ string) error {
		tenant := o.Tenant
		if who != nil {
			var err error
			if tenant, err = liveTenant(who, tenant); err != nil {
				return err
			}
		}
		if tenant == "" {
			return usageError{fmt.Errorf("--tenant is required")}
		}
		ps, err := a.ListPolicies(ctx, tenant)
		if err != nil {
			return err
		}
		if o.JSON {
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
}

func policyShowRun(ctx context.Context, f *Factory, o *PolicyShowOptions) error {
	return withPolicyAdmin(ctx, f, o.DB, nil, func(adm policyAdmin, _ *live.SellerIdentity, _ string) error {
		p, err := adm.GetPolicy(ctx, o.ID)
		if err != nil {
			return adminError(err)
		}
		if o.JSON {
			return writeJSON(f.IO.Out, p)
		}
		w := f.IO.Out
		fmt.Fprintf(w, "%s %q v%d %s (tenant %s, created by %s)\n", p.ID, p.Name, p.Version, p.Status, p.TenantID, p.CreatedBy)
		fmt.Fprintf(w, "  tools %s · sales %s\n", strings.Join(p.AllowedTools, ","), strings.Join(p.Scope.EstateSaleIDs, ","))
		_, err = fmt.Fprintf(w, "  ≤ %d items per run · fields %s · no conflicts %v · ≤ %d actions/day · $%.2f/day\n",
			p.Conditions.MaxItemsPerRun, strings.Join(p.Conditions.PermittedFields, ","), p.Conditions.RequireNoConflicts, p.Limits.MaxDailyActions, p.Limits.MaxCostUSDPerDay)
		if err == nil && len(p.Conditions.CheckoutScans) > 0 {
			_, err = fmt.Fprintf(w, "  checkout scans %s\n", strings.Join(p.Conditions.CheckoutScans, ","))
		}
		return err
	})
}

func policyStatusRun(ctx context.Context, f *Factory, o *PolicyStatusOptions) error {
	var gate *sellerGate
	if o.Status == domain.PolicyActive {
		gate = &sellerGate{Command: "policy enable", Stdin: o.PassphraseStdin, Claims: []claim{{"--by", o.By}}}
	}
	return withPolicyAdmin(ctx, f, o.DB, gate, func(adm policyAdmin, who *live.SellerIdentity, owner string) error {
		by := o.By
		if by == "" {
			by = owner // mock mode: the passphrase's owner enables it
		}
		if who != nil {
			var err error
			if by, err = liveActor(who, "--by", by); err != nil {
				return err
			}
		}
		if by == "" {
			return usageError{fmt.Errorf("--by USER is required (the member taking the action, recorded in the audit log)")}
		}
		p, err := adm.SetPolicyStatus(ctx, o.ID, o.Status, by)
		if err != nil {
			return adminError(err)
		}
		_, err = fmt.Fprintf(f.IO.Out, "%s is now %s (v%d)\n", p.ID, p.Status, p.Version)
		return err
	})
}
