package cli_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/cli"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/store"
)

// The tenant's candidate quota is set with `limits set --candidates
// --candidate-bytes`, shown by `limits show`, stored on the tenant (a
// client's limits never carry it), and refused with --client.
func TestHardening_LimitsSetCandidateQuota(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "q.db")
	r := run(t, env, "--db", db, "limits", "show", "--tenant", fixtures.DemoTenantID, "--json")
	var l domain.Limits
	if err := json.Unmarshal([]byte(r.out), &l); err != nil || l.MaxOpenCandidates != domain.DefaultMaxOpenCandidates ||
		l.MaxCandidateBytes != domain.DefaultMaxCandidateBytes {
		t.Fatalf("defaults: %v %s", err, r.out)
	}
	if r := run(t, env, "--db", db, "limits", "set", "--tenant", fixtures.DemoTenantID, "--candidates", "3", "--candidate-bytes", "65536"); r.code != cli.ExitOK {
		t.Fatal(r)
	}
	r = run(t, env, "--db", db, "limits", "show", "--tenant", fixtures.DemoTenantID, "--json")
	l = domain.Limits{}
	if err := json.Unmarshal([]byte(r.out), &l); err != nil || l.MaxOpenCandidates != 3 || l.MaxCandidateBytes != 65536 || l.ReadsPerMinute != 120 {
		t.Fatalf("after set: %v %s", err, r.out)
	}
	if r := run(t, env, "--db", db, "limits", "show", "--tenant", fixtures.DemoTenantID); !strings.Contains(r.out, "open candidates 3 · candidate bytes 65536") {
		t.Errorf("human show: %q", r.out)
	}
	// A client's limits: the quota is still the tenant's.
	if r := run(t, env, "--db", db, "limits", "set", "--tenant", fixtures.DemoTenantID, "--client", fixtures.DemoClientID, "--reads", "9"); r.code != cli.ExitOK {
		t.Fatal(r)
	}
	r = run(t, env, "--db", db, "limits", "show", "--tenant", fixtures.DemoTenantID, "--client", fixtures.DemoClientID, "--json")
	l = domain.Limits{}
	if err := json.Unmarshal([]byte(r.out), &l); err != nil || l.ReadsPerMinute != 9 || l.MaxOpenCandidates != 3 {
		t.Fatalf("client limits: %v %s", err, r.out)
	}
	for _, bad := range [][]string{
		{"--client", fixtures.DemoClientID, "--candidates", "5"},
		{"--candidates", "-1"},
		{"--candidate-bytes", "-1"},
		{"--candidates", "0"},
	} {
		args := append([]string{"--db", db, "limits", "set", "--tenant", fixtures.DemoTenantID}, bad...)
		if r := run(t, env, args...); r.code != cli.ExitUsage {
			t.Errorf("%v: %+v", bad, r)
		}
	}
	s, err := store.Open(context.Background(), db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	got, err := s.EffectiveLimits(context.Background(), fixtures.DemoTenantID, "")
	if err != nil || got.MaxOpenCandidates != 3 || got.MaxCandidateBytes != 65536 {
		t.Errorf("stored quota = %+v, %v", got, err)
	}
}
