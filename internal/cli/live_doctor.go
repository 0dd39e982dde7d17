package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/triunalabs/trovesnap/internal/config"
	"github.com/triunalabs/trovesnap/internal/live"
	"github.com/triunalabs/trovesnap/store"
)

// LiveDoctor is doctor's live-mode section. It holds no key or token.
type LiveDoctor struct {
	SupabaseURL           string              `json:"supabase_url"`
	Reachable             bool                `json:"reachable"`
	SchemaVersion         int                 `json:"schema_version"`
	ExpectedSchemaVersion int                 `json:"expected_schema_version"`
	Role                  string              `json:"role"`
	TableAccess           bool                `json:"table_access"`
	TablePrivileges       []string            `json:"table_privileges"`
	Problems              []string            `json:"problems"`
	Outbox                *store.OutboxStatus `json:"outbox,omitempty"`
}

// liveDoctor checks what live mode needs: Supabase answers, the migrations
// this release expects are applied, and the public key's role (anon) can
// reach no table directly (only the RPCs, whose authority is a client
// token). The local outbox backlog comes along.
func (f *Factory) liveDoctor(ctx context.Context, cfg config.Config, st *store.Store) *LiveDoctor {
	d := &LiveDoctor{SupabaseURL: cfg.SupabaseURL, ExpectedSchemaVersion: live.SchemaVersion, TablePrivileges: []string{}, Problems: []string{}}
	if ob, err := st.OutboxStatus(ctx); err == nil {
		d.Outbox = &ob
	}
	b, err := f.OpenLive(cfg, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		d.Problems = append(d.Problems, "live configuration refused: "+safeErr(err))
		return d
	}
	v, err := b.RemoteSchemaVersion(ctx)
	if err != nil {
		d.Problems = append(d.Problems, "Supabase unreachable or the public key refused ("+safeErr(err)+"): check "+config.EnvSupabaseURL+", "+config.EnvSupabaseAPIKey+" and that the migrations are pushed")
		return d
	}
	d.Reachable, d.SchemaVersion = true, v
	if v != live.SchemaVersion {
		d.Problems = append(d.Problems, fmt.Sprintf("migration version %d, this release expects %d: run `supabase db push` with this release's supabase/migrations", v, live.SchemaVersion))
	}
	rr, err := b.RoleCheck(ctx)
	if err != nil {
		d.Problems = append(d.Problems, "role check failed ("+safeErr(err)+")")
		return d
	}
	d.Role, d.TableAccess = rr.Role, rr.TableAccess()
	if rr.TablePrivileges != nil {
		d.TablePrivileges = rr.TablePrivileges
	}
	if rr.Role != "anon" {
		d.Problems = append(d.Problems, fmt.Sprintf("the public key acts as role %q, not anon: use the project's anon (publishable) key", rr.Role))
	}
	if d.TableAccess {
		d.Problems = append(d.Problems, "the public key's role can reach tables directly (superuser, BYPASSRLS, schema usage or table grants): anon must only EXECUTE the mcp_* RPCs")
	}
	return d
}

// safeErr is an error's text for the operator: ours only (the live backend
// never puts provider text or the key in its errors).
func safeErr(err error) string {
	s := err.Error()
	if i := strings.Index(s, ": "); i > 0 && strings.HasPrefix(s, "live") {
		s = s[i+2:]
	}
	return s
}

func (d *LiveDoctor) print(w io.Writer) {
	reach := "unreachable"
	if d.Reachable {
		reach = fmt.Sprintf("reachable, migration version %d (expected %d)", d.SchemaVersion, d.ExpectedSchemaVersion)
	}
	fmt.Fprintf(w, "supabase:        %s — %s\n", d.SupabaseURL, reach)
	if d.Role != "" {
		access := "no direct table access (RPCs only)"
		if d.TableAccess {
			access = "CAN REACH TABLES: " + strings.Join(d.TablePrivileges, ", ")
		}
		fmt.Fprintf(w, "public role:     %s, %s\n", d.Role, access)
	}
	if d.Outbox != nil {
		fmt.Fprintf(w, "event outbox:    %d pending, %d rejected (trovesnap sync status)\n", d.Outbox.Pending, d.Outbox.Rejected)
	}
	for _, p := range d.Problems {
		fmt.Fprintf(w, "PROBLEM:         %s\n", p)
	}
}

var errLiveCheck = errors.New("live mode checks failed")

// err is non-nil when a live check failed, so doctor exits non-zero.
func (d *LiveDoctor) err() error {
	if d == nil || len(d.Problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w (%d problem(s) above)", config.ErrLiveUnavailable, errLiveCheck, len(d.Problems))
}
