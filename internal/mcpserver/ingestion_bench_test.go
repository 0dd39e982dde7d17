package mcpserver_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
)

// Figures, not assertions (goals from the issue: preview of 10,000 rows
// ≤ 300 ms, apply of 10,000 rows in one run ≤ 2 s):
//
//	go test -bench 'CSV|CandidateWriteP50' -run '^$' ./internal/mcpserver
//
// Both go through the real go-sdk client (in memory), the gate, the strict
// schema check of a ~0.9 MB argument, parsing, mapping, normalisation and,
// for apply, one SQLite transaction of 20,000 rows plus the key and event.

func benchCSV(rows int) string {
	var b strings.Builder
	b.WriteString("Item Name,Description,Qty,Price ($),Room,Condition,Lot #\n")
	rooms := []string{"Living Room", "den", "Kitchen", "garage", "primary bedroom"}
	for i := range rows {
		fmt.Fprintf(&b, "Lot %d vintage brass lamp,\"Working, with shade; tag %d\",%d,$%d.%02d,%s,good,L-%05d\n",
			i, i, 1+i%4, 5+i%300, i%100, rooms[i%len(rooms)], i)
	}
	return b.String()
}

func BenchmarkCSVPreview10k(b *testing.B) {
	e := ingEnv(b)
	csv := benchCSV(10_000)
	b.SetBytes(int64(len(csv)))
	params := &mcp.CallToolParams{Name: "trove_preview_csv_import", Arguments: map[string]any{"sale_id": fixtures.PublishedSaleID, "csv_text": csv}}
	b.ResetTimer()
	for b.Loop() {
		res, err := e.cs.CallTool(context.Background(), params)
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

func BenchmarkCSVApply10k(b *testing.B) {
	e := ingEnv(b)
	csv := benchCSV(10_000)
	b.SetBytes(int64(len(csv)))
	i := 0
	b.ResetTimer()
	for b.Loop() {
		i++
		res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "trove_apply_csv_import", Arguments: map[string]any{
			"sale_id": fixtures.PublishedSaleID, "csv_text": csv, "idempotency_key": fmt.Sprintf("bench-apply-%06d", i)}})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

// BenchmarkCandidateWriteP50 reports the median latency of one candidate
// write per tool (new key each call), as seen by the client.
func BenchmarkCandidateWriteP50(b *testing.B) {
	pngArg := b64(ingPNG(b, 64, 48, 9))
	writes := map[string]func(i int) map[string]any{
		"create_candidate": func(i int) map[string]any {
			return map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Bench lamp", "idempotency_key": fmt.Sprintf("p50-c-%08d", i)}
		},
		"manual_import_1row": func(i int) map[string]any {
			return map[string]any{"sale_id": fixtures.PublishedSaleID, "rows": []map[string]any{{"title": "Bench lamp"}}, "idempotency_key": fmt.Sprintf("p50-m-%08d", i)}
		},
		"status_update_candidate": func(i int) map[string]any {
			return map[string]any{"item_id": fixtures.DemoItemID, "reported_status": "sold", "effective_at": "2026-06-20T10:00:00Z",
				"source": "staff_report", "idempotency_key": fmt.Sprintf("p50-s-%08d", i)}
		},
		"attach_candidate_photo": func(i int) map[string]any {
			return map[string]any{"candidate_id": fixtures.DemoCandidateID, "image_base64": pngArg, "idempotency_key": fmt.Sprintf("p50-p-%08d", i)}
		},
	}
	tools := map[string]string{"create_candidate": "trove_create_candidate", "manual_import_1row": "trove_run_manual_import",
		"status_update_candidate": "trove_create_status_update_candidate", "attach_candidate_photo": "trove_attach_candidate_photo"}
	names := make([]string, 0, len(writes))
	for n := range writes {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			e := ingEnv(b)
			var lat []time.Duration
			i := 0
			for b.Loop() {
				i++
				start := time.Now()
				res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tools[name], Arguments: writes[name](i)})
				lat = append(lat, time.Since(start))
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		})
	}
}
