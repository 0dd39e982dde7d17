package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/mcpserver"
)

// Figures, not assertions: go test -bench . -run '^$' ./internal/mcpserver

// benchEnv is an env whose limits do not interfere with measuring calls.
func benchEnv(b *testing.B) *env {
	e := newEnv(b)
	l := domain.DefaultLimits()
	l.ReadsPerMinute, l.CandidateWritesPerMinute = 100_000_000, 100_000_000
	if err := e.st.SetLimits(context.Background(), fixtures.DemoTenantID, "", l); err != nil {
		b.Fatal(err)
	}
	return e
}

func BenchmarkListItems50_InMemoryClient(b *testing.B) {
	e := benchEnv(b)
	params := &mcp.CallToolParams{Name: "trove_list_items", Arguments: map[string]any{"sale_id": fixtures.PublishedSaleID, "limit": 50}}
	b.ResetTimer()
	for b.Loop() {
		res, err := e.cs.CallTool(context.Background(), params)
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

func BenchmarkCreateCandidate_NewKey(b *testing.B) {
	e := benchEnv(b)
	i := 0
	b.ResetTimer()
	for b.Loop() {
		i++
		res, err := e.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "trove_create_candidate", Arguments: map[string]any{
			"sale_id": fixtures.PublishedSaleID, "title": "Bench lamp", "idempotency_key": fmt.Sprintf("bench-new-%08d", i)}})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

func BenchmarkCreateCandidate_Replay(b *testing.B) {
	e := benchEnv(b)
	params := &mcp.CallToolParams{Name: "trove_create_candidate", Arguments: map[string]any{
		"sale_id": fixtures.PublishedSaleID, "title": "Bench lamp", "idempotency_key": "bench-replay-0001"}}
	if res, err := e.cs.CallTool(context.Background(), params); err != nil || res.IsError {
		b.Fatal(err, res)
	}
	b.ResetTimer()
	for b.Loop() {
		res, err := e.cs.CallTool(context.Background(), params)
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

// BenchmarkToolsListBytes reports the size of a tools/list answer for the
// public, cataloger and owner sessions (goal for cataloger: ≤ 24 KB).
func BenchmarkToolsListBytes(b *testing.B) {
	e := newEnv(b)
	_, catTok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	_, ownerTok := e.register(fixtures.DemoTenantID, fixtures.DemoUserID)
	for _, s := range []struct {
		name, cred string
		output     bool
	}{{"public", "public", false}, {"cataloger", catTok, false}, {"owner", ownerTok, false}, {"owner+output_schemas", ownerTok, true}} {
		b.Run(s.name, func(b *testing.B) {
			cs := connectServer(b, mcpserver.New(mcpserver.Options{Gate: e.gate, Credential: s.cred, Transport: "inmemory", OutputSchemas: s.output}))
			var size, tools int
			for b.Loop() {
				res, err := cs.ListTools(context.Background(), nil)
				if err != nil {
					b.Fatal(err)
				}
				raw, _ := json.Marshal(res)
				size, tools = len(raw), len(res.Tools)
			}
			b.ReportMetric(float64(size), "bytes")
			b.ReportMetric(float64(tools), "tools")
		})
	}
}

// BenchmarkListSales_InMemoryClient is the audited read of issue 18's
// table, in process (go test -cpuprofile for where its time goes).
func BenchmarkListSales_InMemoryClient(b *testing.B) {
	e := benchEnv(b)
	params := &mcp.CallToolParams{Name: "trove_list_sales", Arguments: map[string]any{}}
	b.ResetTimer()
	for b.Loop() {
		res, err := e.cs.CallTool(context.Background(), params)
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}
