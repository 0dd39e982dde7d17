package cli_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/cli"
)

// `trovesnap import csv` in mock mode: preview and apply through the gate.

// envelopeOf decodes a --json envelope with its data as T.
func envelopeOf[T any](t *testing.T, out string) (env struct {
	Status string `json:"status"`
	Data   T      `json:"data"`
	Errors []struct {
		Code  string `json:"code"`
		Field string `json:"field"`
	} `json:"errors"`
	Audit struct {
		PluginEventID string `json:"plugin_event_id"`
		Replayed      bool   `json:"idempotent_replay"`
	} `json:"audit"`
}) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		t.Fatalf("envelope: %v: %s", err, out)
	}
	return env
}

const inventoryCSV = "Item,Asking,Where\nBrass lamp,$12.50,den\nOak chair,30,kitchen\nRug,,hall\n"

func TestImportCSV_PreviewWritesNothingApplyCreatesCandidatesAndReplays(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "i.db")
	csvFile := writeFile(t, dir, "inventory.csv", []byte(inventoryCSV))
	// The mapping in the form trove_map_csv_columns answers (its data).
	mapFile := writeFile(t, dir, "map.json", []byte(`{"delimiter": "comma", "mapping": [
		{"column": "Item", "field": "title"}, {"column": "Asking", "field": "supplied_price_cents"}, {"column": "Where", "field": "room"}]}`))
	before, beforeCounts := dataDigest(t, db), counts(t, db)

	r := run(t, env, "--db", db, "import", "csv", csvFile, "--sale", fixtures.PublishedSaleID, "--map", mapFile, "--preview", "--json")
	pv := envelopeOf[catalog.PreviewCSVImportOutput](t, r.out)
	if r.code != cli.ExitOK || pv.Status != "succeeded" || pv.Data.RowsTotal != 3 || pv.Data.WouldCreateCandidates != 3 || pv.Data.Persisted ||
		pv.Data.Rows[0].Title != "Brass lamp" || pv.Data.Rows[0].SuppliedPriceCents == nil || *pv.Data.Rows[0].SuppliedPriceCents != 1250 ||
		pv.Data.Rows[1].Room != "kitchen" {
		t.Fatalf("preview: %+v", r)
	}
	if !maps.Equal(before, dataDigest(t, db)) {
		t.Fatal("a preview wrote something")
	}
	if evs := events(t, db, "trove_preview_csv_import"); len(evs) != 1 || evs[0].Outcome != "success" {
		t.Fatalf("preview events: %+v", evs)
	}
	if r := run(t, env, "--db", db, "import", "csv", csvFile, "--sale", fixtures.PublishedSaleID, "--map", mapFile, "--preview"); r.code != cli.ExitOK ||
		!strings.Contains(r.out, "3 candidates") || !strings.Contains(r.out, "nothing written") {
		t.Fatalf("preview (table): %+v", r)
	}

	r = run(t, env, "--db", db, "import", "csv", csvFile, "--sale", fixtures.PublishedSaleID, "--map", mapFile, "--source-label", "family list", "--json")
	ap := envelopeOf[catalog.ImportResult](t, r.out)
	if r.code != cli.ExitOK || !strings.HasPrefix(ap.Status, "succeeded") || ap.Data.CandidateCount != 3 || len(ap.Data.CandidateIDs) != 3 || ap.Data.CanonicalItemsCreated != 0 {
		t.Fatalf("apply: %+v", r)
	}
	after := counts(t, db)
	if after["inventory_candidates"] != beforeCounts["inventory_candidates"]+3 || after["import_runs"] != beforeCounts["import_runs"]+1 ||
		after["source_records"] != beforeCounts["source_records"]+3 || after["items"] != beforeCounts["items"] {
		t.Fatalf("counts after apply: %v (before %v)", after, beforeCounts)
	}
	st := openMock(t, db)
	p, _ := st.ResolvePrincipal(t.Context(), "")
	if c, err := st.GetCandidate(t.Context(), p, ap.Data.CandidateIDs[1]); err != nil || c.Title != "Oak chair" || c.SaleID != fixtures.PublishedSaleID {
		t.Fatalf("candidate %+v, %v", c, err)
	}

	// Again: the original run, nothing new.
	r = run(t, env, "--db", db, "import", "csv", csvFile, "--sale", fixtures.PublishedSaleID, "--map", mapFile, "--source-label", "family list", "--json")
	again := envelopeOf[catalog.ImportResult](t, r.out)
	if r.code != cli.ExitOK || !again.Audit.Replayed || again.Data.ImportRunID != ap.Data.ImportRunID {
		t.Fatalf("rerun: %+v", r)
	}
	if c := counts(t, db); c["inventory_candidates"] != after["inventory_candidates"] || c["import_runs"] != after["import_runs"] {
		t.Fatal("a rerun imported again")
	}
}

func TestImportCSV_RefusalsWriteNothing(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "i.db")
	good := writeFile(t, dir, "ok.csv", []byte(inventoryCSV))
	bad := writeFile(t, dir, "bad.csv", []byte("title,quantity\nLamp,2\nChair,many\n"))
	before := dataDigest(t, db)
	for _, c := range []struct {
		what       string
		argv       []string
		exit       cli.ExitCode
		code, says string
	}{
		{"another tenant's sale", []string{good, "--sale", fixtures.OtherPublishedSaleID}, cli.ExitError, "invalid_reference", ""},
		{"an invalid row", []string{bad, "--sale", fixtures.PublishedSaleID}, cli.ExitError, "invalid_input", ""},
		{"a mapping to an unknown column", []string{good, "--sale", fixtures.PublishedSaleID, "--map",
			writeFile(t, dir, "m1.json", []byte(`[{"column": "Nope", "field": "title"}]`))}, cli.ExitError, "invalid_input", ""},
		{"a map that is no mapping", []string{good, "--sale", fixtures.PublishedSaleID, "--map",
			writeFile(t, dir, "m2.json", []byte(`[{"col": "Item", "field": "title"}]`))}, cli.ExitUsage, "", "--map"},
		{"no sale", []string{good}, cli.ExitUsage, "", "--sale"},
		{"a missing file", []string{filepath.Join(dir, "none.csv"), "--sale", fixtures.PublishedSaleID}, cli.ExitUsage, "", "no such file"},
		{"preview with apply options", []string{good, "--sale", fixtures.PublishedSaleID, "--preview", "--skip-invalid-rows"}, cli.ExitUsage, "", "--preview"},
	} {
		r := run(t, env, append([]string{"--db", db, "import", "csv", "--json"}, c.argv...)...)
		if r.code != c.exit || !strings.Contains(r.err, c.says) {
			t.Errorf("%s: %+v", c.what, r)
			continue
		}
		if c.code != "" {
			if env := envelopeOf[json.RawMessage](t, r.out); strings.HasPrefix(env.Status, "succeeded") || len(env.Errors) == 0 || env.Errors[0].Code != c.code {
				t.Errorf("%s: %+v, want %s", c.what, env, c.code)
			}
		}
	}
	if after := dataDigest(t, db); !maps.Equal(before, after) {
		for k := range after {
			if before[k] != after[k] {
				t.Errorf("table %s changed", k)
			}
		}
	}
}

// The 10,000-row file of the README's figures: the limit of one import.
func bigCSV(rows int) string {
	var b strings.Builder
	b.WriteString("title,category,room,condition,quantity,supplied_price_cents,notes\n")
	for i := range rows {
		fmt.Fprintf(&b, "Mason jar %d,kitchen.glassware,kitchen,good,%d,%d,shelf %d by the window\n", i+1, i%5+1, 100+i%900, i%40)
	}
	return b.String()
}
