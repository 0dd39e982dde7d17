package mcpserver_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
)

// Figures, not assertions: go test -bench . -run '^$' ./internal/mcpserver

func BenchmarkListItems50_InMemoryClient(b *testing.B) {
	e := newEnv(b)
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
	e := newEnv(b)
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
	e := newEnv(b)
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
