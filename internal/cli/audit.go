package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/triunalabs/trovesnap/internal/audit"
	"github.com/triunalabs/trovesnap/internal/config"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/store"
)

// auditSource is what the audit commands read: the local store in mock
// mode; in live mode the signed-in seller's tenant chain in the project
// (live.SellerAudit), whose seller RPCs decide what the user may read.
type auditSource interface {
	audit.ChainSource
	audit.HeadSource
	audit.TraceSource
}

var (
	_ auditSource = (*store.Store)(nil)
	_ auditSource = (*live.SellerAudit)(nil)
)

const auditTenantUsage = "live mode: the tenant, when the signed-in user is a member of several"

// withAuditSource runs fn on the audit log of the configured mode. In live
// mode the log is the project's (`trovesnap login` first): the local file
// holds no live events. tenant picks the membership in live mode.
func withAuditSource(ctx context.Context, f *Factory, db, tenant string, fn func(src auditSource) error) error {
	cfg, err := f.Config(db)
	if err != nil {
		return err
	}
	if cfg.Mode != domain.ModeLive {
		return withConfiguredStore(ctx, f, cfg, func(_ config.Config, st *store.Store) error { return fn(st) })
	}
	seller, err := f.OpenSeller(ctx, cfg)
	if err != nil {
		return err
	}
	who, err := seller.WhoAmI(ctx)
	if err != nil {
		return err
	}
	m, err := who.Membership(tenant)
	if err != nil {
		return usageError{err}
	}
	return fn(seller.Audit(m.TenantID))
}

// `trovesnap audit`: verify the plugin_event hash chains, print their heads,
// reconstruct a request or a proposal (§45), follow and show events. All
// read-only; none is reachable from MCP.

const auditLimits = `What verification proves: every event still has the content it was
recorded with, and no event was deleted, reordered, duplicated or inserted
between two others. What it cannot prove on its own: that the newest events
were not removed, or that the whole chain was not rewritten end to end by
someone with write access to the database file (the hash has no secret, so a
rewritten chain verifies). Keep the output of ` + "`trovesnap audit head --json`" + `
somewhere else (a ticket, a log system, another machine) and check it with
` + "`trovesnap audit verify --against FILE`" + `: that detects truncation and rewrites
of everything up to the kept head.`

func newAuditCmd(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Verify, trace and follow the tamper-evident plugin_event log",
		Long:  "The append-only plugin_event log, one hash chain per tenant.\n\n" + auditLimits,
	}
	cmd.AddCommand(newAuditVerifyCmd(f), newAuditHeadCmd(f), newAuditTraceCmd(f), newAuditTailCmd(f), newAuditShowCmd(f))
	return cmd
}

// AuditVerifyOptions are the options of `audit verify`.
type AuditVerifyOptions struct {
	Tenant  string
	DB      string
	JSON    bool
	Against string
}

func newAuditVerifyCmd(f *Factory) *cobra.Command {
	o := &AuditVerifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Recompute every chain; exit 6 naming the first bad event if one does not verify",
		Long: "Recompute every tenant chain from the stored events and report the first bad link of each\n" +
			"(modified, deleted, reordered, duplicated, inserted). Exit 0 when all are intact, 6 otherwise.\n\n" + auditLimits,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.DB = dbFlag(cmd)
			return auditVerifyRun(cmd.Context(), f, o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&o.Against, "against", "", "a file written by `audit head --json` earlier: each saved head must still be in its chain")
	cmd.Flags().StringVar(&o.Tenant, "tenant", "", auditTenantUsage)
	return cmd
}

func auditVerifyRun(ctx context.Context, f *Factory, o *AuditVerifyOptions) error {
	var saved []domain.ChainHead
	if o.Against != "" {
		var err error
		if saved, err = readHeads(o.Against); err != nil {
			return usageError{err}
		}
	}
	return withAuditSource(ctx, f, o.DB, o.Tenant, func(st auditSource) error {
		rep, err := audit.Verify(ctx, st, audit.VerifyOptions{Against: saved})
		if err != nil {
			return err
		}
		if o.JSON {
			if err := writeJSON(f.IO.Out, rep); err != nil {
				return err
			}
		} else if err := printVerify(f.IO.Out, rep); err != nil {
			return err
		}
		return rep.Err()
	})
}

func printVerify(w io.Writer, rep audit.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TENANT\tEVENTS\tLEGACY\tHEAD SEQ\tHEAD HASH\tSTATE")
	for _, c := range rep.Chains {
		state := "intact"
		if !c.Intact {
			state = "BROKEN"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\n", auditTenant(c.TenantID), c.Events, c.Legacy, c.HeadSeq, c.HeadHash, state)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.Intact {
		against := ""
		if rep.Against > 0 {
			against = fmt.Sprintf(", %d saved head(s) still in place", rep.Against)
		}
		_, err := fmt.Fprintf(w, "%d events verified in %d chain(s)%s.\n", rep.Events, len(rep.Chains), against)
		return err
	}
	for _, p := range rep.Problems {
		if _, err := fmt.Fprintf(w, "BAD LINK  %s\n", p); err != nil {
			return err
		}
	}
	return nil
}

func auditTenant(t string) string {
	if t == "" {
		return "(no tenant)"
	}
	return t
}

// HeadsFile is the output of `audit head --json` and the input of
// `audit verify --against`.
type HeadsFile struct {
	RecordedAt time.Time          `json:"recorded_at"`
	Heads      []domain.ChainHead `json:"heads"`
}

func readHeads(path string) ([]domain.ChainHead, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--against: %w", err)
	}
	var hf HeadsFile
	if err := json.Unmarshal(b, &hf); err != nil || hf.Heads == nil {
		// Also accept a bare list of heads.
		if err2 := json.Unmarshal(b, &hf.Heads); err2 != nil {
			return nil, fmt.Errorf("--against %s: not the output of `trovesnap audit head --json`", path)
		}
	}
	return hf.Heads, nil
}

// AuditHeadOptions are the options of `audit head`.
type AuditHeadOptions struct {
	Tenant string
	DB     string
	JSON   bool
}

func newAuditHeadCmd(f *Factory) *cobra.Command {
	o := &AuditHeadOptions{}
	cmd := &cobra.Command{
		Use:   "head",
		Short: "Print the head hash of every chain, to keep somewhere else",
		Long:  "Print the newest event and its hash for every tenant chain (no verification).\n\n" + auditLimits,
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.DB = dbFlag(cmd)
			return auditHeadRun(cmd.Context(), f, o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON (the input of `audit verify --against`)")
	cmd.Flags().StringVar(&o.Tenant, "tenant", "", auditTenantUsage)
	return cmd
}

func auditHeadRun(ctx context.Context, f *Factory, o *AuditHeadOptions) error {
	return withAuditSource(ctx, f, o.DB, o.Tenant, func(st auditSource) error {
		heads, err := audit.Heads(ctx, st)
		if err != nil {
			return err
		}
		if o.JSON {
			return writeJSON(f.IO.Out, HeadsFile{RecordedAt: f.Clock.Now().UTC(), Heads: heads})
		}
		tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TENANT\tEVENTS\tSEQ\tEVENT\tHEAD HASH")
		for _, h := range heads {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", auditTenant(h.TenantID), h.Events, h.Seq, h.EventID, h.EventHash)
		}
		return tw.Flush()
	})
}

// AuditTraceOptions are the options of `audit trace`.
type AuditTraceOptions struct {
	Tenant string
	DB     string
	ID     string // a proposal, correlation, event or request id
	JSON   bool
}

func newAuditTraceCmd(f *Factory) *cobra.Command {
	o := &AuditTraceOptions{}
	cmd := &cobra.Command{
		Use:   "trace ID",
		Short: "Reconstruct a request or proposal and answer, for each invocation, who, what, under which authority, with what effect",
		Long: "ID is a proposal_id, a correlation_id, a plugin event id, or a request id (the caller's request_id or the\n" +
			"server_request_id of an envelope). Prints every recorded event of that request or proposal, and the replays\n" +
			"they caused, in order: client, tool and schema version, actor and tenant, permissions, mode, what changed,\n" +
			"domain function, approval (required, decision, issuer, bound to the exact proposal), records, replay, cost,\n" +
			"public or buyer effects, event and trace ids, and whether the client and the authority can still be stopped.",
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			o.DB = dbFlag(cmd)
			o.ID = a[0]
			return auditTraceRun(cmd.Context(), f, o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&o.Tenant, "tenant", "", auditTenantUsage)
	return cmd
}

func auditTraceRun(ctx context.Context, f *Factory, o *AuditTraceOptions) error {
	return withAuditSource(ctx, f, o.DB, o.Tenant, func(st auditSource) error {
		tr, err := audit.Trace(ctx, st, o.ID)
		if err != nil {
			return err
		}
		if o.JSON {
			return writeJSON(f.IO.Out, tr)
		}
		return printTrace(f.IO.Out, tr)
	})
}

func auditYesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func auditOrDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func printTrace(w io.Writer, tr audit.TraceResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "trace of %s (matched by %s; correlation %s)\n", tr.Query, tr.MatchedBy, strings.Join(tr.CorrelationIDs, ", "))
	for _, p := range tr.Proposals {
		fmt.Fprintf(&b, "proposal %s: %s via %s, status now %s, requirement %s\n  hash %s\n  targets %s\n  proposed by %s → approved by %s → executed by %s\n",
			p.ID, p.Action, p.Tool, p.Status, p.Requirement, p.Hash, strings.Join(p.TargetIDs, ", "),
			auditOrDash(p.CreatedByEvent), auditOrDash(p.ApprovedByEvent), auditOrDash(p.ExecutedByEvent))
	}
	if !tr.ChainIntact {
		b.WriteString("WARNING: an event below no longer matches its hash: run `trovesnap audit verify`\n")
	}
	for _, s := range tr.Steps {
		code := ""
		if s.ErrorCode != "" {
			code = " " + s.ErrorCode
			if s.AuditCode != "" {
				code += " (audit: " + s.AuditCode + ")"
			}
		}
		fmt.Fprintf(&b, "\n#%d %s  %s  %s  %s%s  [%s]\n", s.Seq, s.OccurredAt.UTC().Format(time.RFC3339), s.EventID, s.Action, s.Outcome, code, s.Change)
		c := s.Client
		if c.ID != "" {
			stop := "cannot be suspended (" + auditOrDash(c.StatusNow) + ")"
			if c.CanSuspend {
				stop = "suspend with `" + c.SuspendCommand + "`"
			}
			fmt.Fprintf(&b, "  client     %s %q (%s), now %s; %s; revocable %s\n", c.ID, c.Name, auditOrDash(c.Type), auditOrDash(c.StatusNow), stop, auditYesNo(c.CanRevoke))
		} else {
			b.WriteString("  client     none (anonymous, or refused before the client was known)\n")
		}
		if s.Tool.Name != "" {
			dep := ""
			if s.Tool.Deprecated {
				dep = ", DEPRECATED"
			}
			fmt.Fprintf(&b, "  tool       %s %s (%s, %s%s) input schema %s\n", s.Tool.Name, auditOrDash(s.Tool.Version), auditOrDash(s.Tool.Tier), auditOrDash(s.Tool.Risk), dep, auditOrDash(s.Tool.InputSchemaHash))
		}
		fmt.Fprintf(&b, "  actor      %s (%s, role %s) in tenant %s; permissions used: %s\n", auditOrDash(s.Actor.ID), s.Actor.Type, auditOrDash(s.Actor.Role),
			auditTenant(s.TenantID), auditOrDash(strings.Join(s.Permissions, ", ")))
		fmt.Fprintf(&b, "  mode       %s; change: %s; domain function: %s\n", auditOrDash(s.Mode), s.Change, auditOrDash(s.DomainFunction))
		ap := s.Approval
		fmt.Fprintf(&b, "  approval   required %s (%s); decision %s; proposal %s; approval %s\n", auditYesNo(ap.Required), auditOrDash(ap.Requirement), auditOrDash(ap.Decision), auditOrDash(ap.ProposalID), auditOrDash(ap.ApprovalID))
		if ap.IssuedBy != nil {
			who := "human " + ap.IssuedBy.ActorID
			if ap.IssuedBy.Surface != "" {
				who += " via " + ap.IssuedBy.Surface
			}
			if ap.IssuedBy.Type == domain.IssuerPolicy {
				who = fmt.Sprintf("policy %s v%d (now %s)", ap.IssuedBy.PolicyID, ap.IssuedBy.PolicyVersion, auditOrDash(ap.PolicyStatusNow))
			}
			fmt.Fprintf(&b, "             issued by %s; bound to the exact proposal (hash %s): %s; grant now %s; can be revoked: %s\n",
				who, auditOrDash(ap.ProposalHash), auditYesNo(ap.BoundToExactProposal), auditOrDash(ap.GrantStatusNow), auditYesNo(ap.Revocable))
		}
		fmt.Fprintf(&b, "  records    %s\n", auditRelated(s.RecordsChanged))
		replay := "no"
		if s.Replayed {
			replay = "yes, of " + auditOrDash(s.ReplayOf)
		}
		fmt.Fprintf(&b, "  effects    replay %s; cost $%g; public visibility changed %s; buyers contacted %s; latency %.1f ms\n",
			replay, s.CostUSD, auditYesNo(s.Public), auditYesNo(s.BuyerContact), s.LatencyMS)
		valid := "matches its hash"
		if !s.HashValid {
			valid = "DOES NOT MATCH its hash"
		}
		fmt.Fprintf(&b, "  event      %s %s (%s); trace %s; caused by %s\n", s.EventID, auditOrDash(s.EventHash), valid, auditOrDash(s.TraceID), auditOrDash(s.CausationID))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func auditRelated(r domain.Related) string {
	var parts []string
	for _, x := range []struct {
		name string
		ids  []string
	}{{"runs", r.SourceImportRunIDs}, {"records", r.SourceImportRecordIDs}, {"candidates", r.CandidateIDs}, {"items", r.ItemIDs},
		{"proposals", r.ProposalIDs}, {"events", r.EventIDs}} {
		if len(x.ids) > 0 {
			parts = append(parts, x.name+" "+strings.Join(x.ids, ","))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// AuditTailOptions are the options of `audit tail`.
type AuditTailOptions struct {
	DB       string
	Lines    int
	Follow   bool
	JSON     bool
	Tenant   string
	Interval time.Duration
}

// TailRecord is one line of `audit tail --json`: the event with its chain
// position.
type TailRecord struct {
	Seq       int64           `json:"seq"`
	PrevHash  string          `json:"prev_hash"`
	EventHash string          `json:"event_hash"`
	Event     json.RawMessage `json:"event"`
}

func newAuditTailCmd(f *Factory) *cobra.Command {
	o := &AuditTailOptions{}
	cmd := &cobra.Command{
		Use:   "tail",
		Short: "Print the newest events; --follow keeps printing new ones until interrupted",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.DB = dbFlag(cmd)
			return auditTailRun(cmd.Context(), f, o)
		},
	}
	cmd.Flags().IntVarP(&o.Lines, "lines", "n", 20, "how many of the newest events to print first")
	cmd.Flags().BoolVarP(&o.Follow, "follow", "f", false, "keep polling for new events until interrupted")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print one JSON object per event")
	cmd.Flags().StringVar(&o.Tenant, "tenant", "", "only this tenant's chain (live mode: the tenant, when the signed-in user is a member of several)")
	cmd.Flags().DurationVar(&o.Interval, "interval", time.Second, "polling interval with --follow")
	return cmd
}

func auditTailRun(ctx context.Context, f *Factory, o *AuditTailOptions) error {
	if o.Lines < 0 || o.Interval <= 0 {
		return usageError{errors.New("-n must be >= 0 and --interval > 0")}
	}
	return withAuditSource(ctx, f, o.DB, o.Tenant, func(st auditSource) error {
		return tailEvents(ctx, f, st, o)
	})
}

// tailEvents prints the newest events of st and, with --follow, new ones.
func tailEvents(ctx context.Context, f *Factory, st auditSource, o *AuditTailOptions) error {
	var (
		recs []domain.ChainRecord
		last int64
		err  error
	)
	if o.Lines > 0 {
		if recs, err = st.AuditEvents(ctx, domain.EventQuery{TenantID: o.Tenant, Limit: o.Lines, Newest: true}); err != nil {
			return err
		}
	} else {
		// -n 0: start at the end without printing anything.
		newest, err := st.AuditEvents(ctx, domain.EventQuery{TenantID: o.Tenant, Limit: 1, Newest: true})
		if err != nil {
			return err
		}
		if len(newest) > 0 {
			last = newest[0].Seq
		}
	}
	for {
		for _, r := range recs {
			if err := printTail(f.IO.Out, r, o.JSON); err != nil {
				return err
			}
			last = r.Seq
		}
		if !o.Follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil // interrupted: a normal end of --follow
		case <-time.After(o.Interval):
		}
		if recs, err = st.AuditEvents(ctx, domain.EventQuery{TenantID: o.Tenant, AfterSeq: last, Limit: 1000}); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

func printTail(w io.Writer, r domain.ChainRecord, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(TailRecord{Seq: r.Seq, PrevHash: r.PrevHash, EventHash: r.EventHash, Event: r.Body})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	what := r.ToolName
	var ev domain.Event
	if json.Unmarshal(r.Body, &ev) == nil && ev.Action != "mcp_tool_called" {
		what = ev.Action
	}
	code := ""
	if ev.ErrorCode != "" {
		code = " " + ev.ErrorCode
	}
	_, err := fmt.Fprintf(w, "%6d  %s  %-14s  %s  %s  %s%s  %s\n", r.Seq, r.OccurredAt, auditTenant(r.TenantID), r.ID, auditOrDash(what), r.Outcome, code, r.CorrelationID)
	return err
}

// ShowOutput is `audit show --json`: one event, its chain links and whether
// it still matches its hash.
type ShowOutput struct {
	Seq       int64           `json:"seq"`
	PrevHash  string          `json:"prev_hash"`
	EventHash string          `json:"event_hash"`
	HashValid bool            `json:"event_matches_hash"`
	Event     json.RawMessage `json:"event"`
}

// AuditShowOptions are the options of `audit show`.
type AuditShowOptions struct {
	Tenant string
	DB     string
	ID     string // the event id
	JSON   bool
}

func newAuditShowCmd(f *Factory) *cobra.Command {
	o := &AuditShowOptions{}
	cmd := &cobra.Command{
		Use:   "show EVENT_ID",
		Short: "Print one plugin_event with its chain links",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			o.DB = dbFlag(cmd)
			o.ID = a[0]
			return auditShowRun(cmd.Context(), f, o)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&o.Tenant, "tenant", "", auditTenantUsage)
	return cmd
}

func auditShowRun(ctx context.Context, f *Factory, o *AuditShowOptions) error {
	return withAuditSource(ctx, f, o.DB, o.Tenant, func(st auditSource) error {
		recs, err := st.AuditEvents(ctx, domain.EventQuery{ID: o.ID})
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			return fmt.Errorf("%w: %s", audit.ErrNoTrace, o.ID)
		}
		r := recs[0]
		h, _ := domain.EventHash(r.Body, r.PrevHash)
		out := ShowOutput{Seq: r.Seq, PrevHash: r.PrevHash, EventHash: r.EventHash, HashValid: r.EventHash != "" && h == r.EventHash, Event: r.Body}
		if o.JSON {
			return writeJSON(f.IO.Out, out)
		}
		valid := "matches its hash"
		if !out.HashValid {
			valid = "DOES NOT MATCH its hash"
		}
		var pretty strings.Builder
		var v any
		_ = json.Unmarshal(r.Body, &v)
		enc := json.NewEncoder(&pretty)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v)
		_, err = fmt.Fprintf(f.IO.Out, "event %s (seq %d, tenant %s)\nprev_hash  %s\nevent_hash %s (%s)\n%s",
			r.ID, r.Seq, auditTenant(r.TenantID), auditOrDash(r.PrevHash), auditOrDash(r.EventHash), valid, pretty.String())
		return err
	})
}
