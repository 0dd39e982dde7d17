package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// ErrChainBroken is returned (wrapped, naming the first bad event) when an
// audit chain does not verify or differs from a saved head.
var ErrChainBroken = errors.New("audit chain broken")

// ChainSource streams the stored events in seq order (store.Store).
type ChainSource interface {
	ScanChain(ctx context.Context, afterSeq int64, fn func(rec domain.ChainRecord) error) error
}

// BodyOnlyColumns is implemented by a ChainSource whose store keeps some of
// a record's fields in the body only, with no column of their own (live
// mode has no causation_id column): its records leave them empty, and the
// verifier compares no column for them.
type BodyOnlyColumns interface {
	BodyOnlyColumns() []string
}

// ExactBodies is implemented by a ChainSource that sends each body as the
// very bytes that were hashed (live mode keeps that text): a body that does
// not hash is modified, even if it canonicalises to the hashed form, since
// the bytes a reader is shown are then not the ones recorded.
type ExactBodies interface {
	ExactBodies() bool
}

// HeadSource lists the newest event of each chain (store.Store).
type HeadSource interface {
	ChainHeads(ctx context.Context) ([]domain.ChainHead, error)
}

// Problem kinds: what a bad link most likely is. A link can only say that
// something is wrong at this place; the kind is the reading that fits.
const (
	ProblemModified   = "modified"   // body, hash or an indexed column differs from what was recorded
	ProblemDeleted    = "deleted"    // the event this one chains to is gone (deleted or replaced)
	ProblemInserted   = "inserted"   // an event that is not part of the chain sits in it
	ProblemReordered  = "reordered"  // the event this one chains to is stored after it
	ProblemDuplicated = "duplicated" // a copy of an earlier event
	ProblemTruncated  = "truncated"  // a saved head is gone: the newest events were removed
	ProblemRewritten  = "rewritten"  // a saved head's event now has another hash or position
)

// Problem is one bad link: where, what, and why in words.
type Problem struct {
	Kind     string `json:"kind"`
	TenantID string `json:"tenant_id"`
	Seq      int64  `json:"seq"`
	EventID  string `json:"event_id"`
	Reason   string `json:"reason"`
}

func (p Problem) String() string {
	return fmt.Sprintf("event %s (seq %d, tenant %q): %s: %s", p.EventID, p.Seq, p.TenantID, p.Kind, p.Reason)
}

// Chain is the verified state of one tenant chain.
type Chain struct {
	TenantID string `json:"tenant_id"`
	Events   int64  `json:"events"`
	// Legacy counts events recorded before the chain existed (migration
	// 0006): they precede the chain and are not covered by it.
	Legacy    int64  `json:"legacy_unhashed"`
	HeadSeq   int64  `json:"head_seq"`
	HeadEvent string `json:"head_event_id"`
	HeadHash  string `json:"head_hash"`
	Intact    bool   `json:"intact"`
}

// Report is the result of Verify.
type Report struct {
	Intact bool  `json:"intact"`
	Events int64 `json:"events"`
	// Chains lists every tenant chain, by tenant id.
	Chains []Chain `json:"chains"`
	// Problems holds the first bad link of each broken chain (and each
	// saved head that no longer holds), by seq; First is the earliest.
	Problems []Problem `json:"problems"`
	First    *Problem  `json:"first_problem,omitempty"`
	// Against reports how many saved heads were checked.
	Against int `json:"saved_heads_checked,omitempty"`
}

// Err is nil for an intact report and otherwise ErrChainBroken naming the
// first bad event.
func (r Report) Err() error {
	if r.Intact {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrChainBroken, r.First)
}

// VerifyOptions tune Verify.
type VerifyOptions struct {
	// Against are heads saved earlier (`audit head --json`): each must still
	// be in its chain, at the same position with the same hash.
	Against []domain.ChainHead
}

type entry struct {
	seq int64
	id  string
}

type chainState struct {
	Chain
	hashed   int64
	lastHash string
	lastSeq  int64
	hashes   map[string]int64 // event_hash → seq, for classifying links
	order    []entry          // hashed events in chain order
	problem  *Problem
	link     *domain.ChainRecord // a broken link, classified after the scan
	saved    *domain.ChainHead
	savedOK  bool
}

// Verify recomputes every tenant chain and reports the first bad link of
// each. It reads every event once, hashing the stored (already canonical)
// body directly and canonicalising only a body that no longer hashes as
// stored, so its cost is dominated by reading the rows.
func Verify(ctx context.Context, src ChainSource, opts VerifyOptions) (Report, error) {
	var bodyOnly []string
	if b, ok := src.(BodyOnlyColumns); ok {
		bodyOnly = b.BodyOnlyColumns()
	}
	exact := false
	if e, ok := src.(ExactBodies); ok {
		exact = e.ExactBodies()
	}
	chains := map[string]*chainState{}
	ids := map[string]int64{}
	var total int64
	state := func(tenant string) *chainState {
		st := chains[tenant]
		if st == nil {
			st = &chainState{Chain: Chain{TenantID: tenant}, hashes: map[string]int64{}}
			chains[tenant] = st
		}
		return st
	}
	for i := range opts.Against {
		h := opts.Against[i]
		state(h.TenantID).saved = &h
	}
	err := src.ScanChain(ctx, 0, func(r domain.ChainRecord) error {
		total++
		st := state(r.TenantID)
		st.Events++
		st.HeadSeq, st.HeadEvent, st.HeadHash = r.Seq, r.ID, r.EventHash
		if st.saved != nil && st.saved.EventID == r.ID {
			st.savedOK = st.saved.Seq == r.Seq && st.saved.EventHash == r.EventHash && st.saved.Events == st.Events
		}
		first, dup := ids[r.ID]
		if !dup {
			ids[r.ID] = r.Seq
		}
		if st.problem != nil {
			if r.EventHash != "" {
				if _, seen := st.hashes[r.EventHash]; !seen {
					st.hashes[r.EventHash] = r.Seq
				}
				st.order = append(st.order, entry{r.Seq, r.ID})
			}
			return nil
		}
		bad := func(kind, format string, a ...any) {
			st.problem = &Problem{Kind: kind, TenantID: r.TenantID, Seq: r.Seq, EventID: r.ID, Reason: fmt.Sprintf(format, a...)}
		}
		switch {
		case dup:
			bad(ProblemDuplicated, "another event with this id is stored at seq %d", first)
			return nil
		case r.EventHash == "" && st.hashed == 0:
			st.Legacy++ // recorded before the chain existed
			return nil
		case r.EventHash == "":
			bad(ProblemInserted, "it has no hash, but its chain had started (last hashed event at seq %d)", st.lastSeq)
			return nil
		}
		if s, seen := st.hashes[r.EventHash]; seen {
			bad(ProblemDuplicated, "it has the same hash as the event at seq %d: a copy", s)
			return nil
		}
		if h := recompute(r.Body, r.PrevHash, r.EventHash, exact); h == "" {
			bad(ProblemModified, "its body is no longer the JSON that was hashed (stored hash %s)", short(r.EventHash))
		} else if h != r.EventHash {
			bad(ProblemModified, "its content no longer matches its hash (stored %s, recomputed %s)", short(r.EventHash), short(h))
		} else if col, value, differ := columnsDiffer(r, bodyOnly); differ {
			bad(ProblemModified, "its %s column says %q but the recorded event says %q", col, value, bodyValue(r, col))
		} else if r.PrevHash != st.lastHash {
			rec := r
			rec.Body = nil
			st.link = &rec
			st.problem = &Problem{} // classified once every hash is known
		}
		st.hashes[r.EventHash] = r.Seq
		st.order = append(st.order, entry{r.Seq, r.ID})
		st.hashed++
		st.lastHash, st.lastSeq = r.EventHash, r.Seq
		return nil
	})
	if err != nil {
		return Report{}, err
	}
	rep := Report{Intact: true, Events: total, Chains: []Chain{}, Problems: []Problem{}, Against: len(opts.Against)}
	for _, st := range chains {
		if st.link != nil {
			p := classifyLink(st, *st.link)
			st.problem = &p
		}
		if st.saved != nil && st.problem == nil && !st.savedOK {
			st.problem = savedHeadProblem(st)
		}
		st.Intact = st.problem == nil
		if st.Events > 0 || st.saved != nil {
			rep.Chains = append(rep.Chains, st.Chain)
		}
		if st.problem != nil {
			rep.Intact = false
			rep.Problems = append(rep.Problems, *st.problem)
		}
	}
	sort.Slice(rep.Chains, func(i, j int) bool { return rep.Chains[i].TenantID < rep.Chains[j].TenantID })
	sort.Slice(rep.Problems, func(i, j int) bool { return rep.Problems[i].Seq < rep.Problems[j].Seq })
	if len(rep.Problems) > 0 {
		rep.First = &rep.Problems[0]
	}
	return rep, nil
}

// recompute is the event's hash from its stored body and prev_hash. The
// store keeps bodies canonical, so hashing the stored bytes is enough when
// they match (equal SHA-256 means equal bytes); only a body that no longer
// hashes as stored is canonicalised, which also accepts a body re-serialised
// by another writer (same JSON, other bytes).
func recompute(body []byte, prev, stored string, exact bool) string {
	if domain.ChainHashMatches(body, prev, stored) {
		return stored
	}
	if exact {
		return domain.ChainHash(body, prev) // these bytes, whatever their form
	}
	canon, err := domain.CanonicalJSON(body)
	if err != nil {
		return "" // not JSON any more
	}
	return domain.ChainHash(canon, prev)
}

// classifyLink names a link whose prev_hash is not the previous event's hash.
func classifyLink(st *chainState, r domain.ChainRecord) Problem {
	p := Problem{TenantID: r.TenantID, Seq: r.Seq, EventID: r.ID}
	at, found := st.hashes[r.PrevHash]
	switch {
	case r.PrevHash == domain.ChainGenesis:
		p.Kind, p.Reason = ProblemInserted, "it starts a second chain (empty prev_hash) after the chain had begun"
	case found && at > r.Seq:
		p.Kind, p.Reason = ProblemReordered, fmt.Sprintf("it chains to the event at seq %d, which is stored after it", at)
	case found:
		// Everything stored between the event it chains to and itself does
		// not belong: name the first such event.
		p.Kind = ProblemInserted
		for _, e := range st.order {
			if e.seq > at && e.seq < r.Seq {
				p.Seq, p.EventID = e.seq, e.id
				break
			}
		}
		p.Reason = fmt.Sprintf("it is not part of the chain: event %s (seq %d) chains directly to seq %d", r.ID, r.Seq, at)
	default:
		p.Kind, p.Reason = ProblemDeleted, fmt.Sprintf("the event it chains to (%s) is missing: an event before it was deleted or replaced", short(r.PrevHash))
	}
	return p
}

func savedHeadProblem(st *chainState) *Problem {
	h := st.saved
	p := &Problem{TenantID: h.TenantID, Seq: h.Seq, EventID: h.EventID}
	if _, present := st.hashes[h.EventHash]; !present && st.Events < h.Events {
		p.Kind = ProblemTruncated
		p.Reason = fmt.Sprintf("the saved head (event %d of the chain) is gone: the chain now has %d events and ends at seq %d", h.Events, st.Events, st.HeadSeq)
		return p
	}
	p.Kind = ProblemRewritten
	p.Reason = fmt.Sprintf("the saved head %s (event %d of the chain) is no longer there with that hash and position: the chain was rewritten", short(h.EventHash), h.Events)
	return p
}

func short(h string) string {
	if len(h) > 19 {
		return h[:19] + "…"
	}
	return h
}

// columnsDiffer returns the first indexed column that disagrees with the
// body, and the column's value (an emptied column differs too); a column
// named in bodyOnly is none. A time
// agrees within half a microsecond: Postgres keeps the body's nanoseconds
// rounded to the nearest microsecond.
func columnsDiffer(r domain.ChainRecord, bodyOnly []string) (col, value string, differ bool) {
	c, err := readColumns(r.Body)
	if err != nil {
		return "body", "unreadable", true
	}
	// string(b) == s compares without allocating.
	for _, x := range []struct {
		name, col string
		body      []byte
	}{
		{"id", r.ID, c.ID}, {"tenant_id", r.TenantID, c.TenantID}, {"correlation_id", r.CorrelationID, c.CorrelationID},
		{"causation_id", r.CausationID, c.CausationID}, {"request_id", r.RequestID, c.RequestID},
		{"server_request_id", r.ServerRequestID, c.ServerRequestID}, {"tool_name", r.ToolName, c.ToolName},
		{"outcome", r.Outcome, c.Outcome},
	} {
		if x.col != string(x.body) && !slices.Contains(bodyOnly, x.name) {
			return x.name, x.col, true
		}
	}
	colAt, err1 := time.Parse(time.RFC3339Nano, r.OccurredAt)
	bodyAt, err2 := time.Parse(time.RFC3339Nano, string(c.OccurredAt))
	if d := bodyAt.Sub(colAt); err1 != nil || err2 != nil || d < -time.Microsecond/2 || d > time.Microsecond/2 {
		return "occurred_at", r.OccurredAt, true
	}
	return "", "", false
}

func bodyValue(r domain.ChainRecord, col string) string {
	c, _ := readColumns(r.Body)
	return string(map[string][]byte{"id": c.ID, "tenant_id": c.TenantID, "correlation_id": c.CorrelationID, "causation_id": c.CausationID,
		"request_id": c.RequestID, "server_request_id": c.ServerRequestID, "tool_name": c.ToolName, "outcome": c.Outcome,
		"occurred_at": c.OccurredAt}[col])
}

// Heads returns the current head of every chain, without verifying: what an
// operator records elsewhere to detect truncation or a rewrite later.
func Heads(ctx context.Context, src HeadSource) ([]domain.ChainHead, error) {
	return src.ChainHeads(ctx)
}
