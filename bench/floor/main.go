// Command floor is the benchmark floor of `trovesnap mcp serve` (issue 18):
// the least a stdio MCP server can do for the same calls on the same
// SQLite file — one connection, prepared statements, WAL with
// synchronous=NORMAL like the store, no gate — so every figure of the
// benchmark suite (scripts/bench) is a ratio to what this machine does in
// the same run. Bench-only code: nothing else imports or ships it.
//
//	floor -db FILE [-audit=false]
//
// It answers initialize, notifications, tools/list (the three tools) and
// tools/call of trove_list_sales, trove_list_items and
// trove_create_candidate with an envelope of trovesnap's shape (the result
// as structuredContent and the same JSON as text). With -audit (the
// default) each call appends one hash-chained event in the call's own
// transaction, committed before the answer, as trovesnap's audit does.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	_ "modernc.org/sqlite"
)

const tenant = "tenant_123"

type server struct {
	db                            *sql.DB
	audit                         bool
	sales, items, lastHash, addEv *sql.Stmt
	addCand, addKey               *sql.Stmt
	out                           *bufio.Writer
}

func main() {
	path := flag.String("db", "", "the trovesnap database file")
	audit := flag.Bool("audit", true, "append one chained event per call")
	flag.Parse()
	if err := run(*path, *audit); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

func run(path string, audit bool) error {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(5000)&_txlock=immediate")
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1)
	defer db.Close()
	ctx := context.Background()
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS floor_events (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, prev_hash TEXT NOT NULL,
			hash TEXT NOT NULL, body TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS floor_keys (key TEXT PRIMARY KEY, result TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS floor_candidates (id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, sale_id TEXT NOT NULL,
			title TEXT NOT NULL, created_at TEXT NOT NULL)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	s := &server{db: db, audit: audit, out: bufio.NewWriterSize(os.Stdout, 1<<16)}
	prep := func(dst **sql.Stmt, q string) {
		if err == nil {
			*dst, err = db.PrepareContext(ctx, q)
		}
	}
	prep(&s.sales, `SELECT id, title, status, visibility, city, region, postal_code, address_policy, coalesce(address_reveal_at, ''),
		starts_at, ends_at, version FROM estate_sales WHERE tenant_id = ? ORDER BY starts_at, id LIMIT 50`)
	prep(&s.items, `SELECT id, sale_id, title, description, category, room, status, coalesce(price_cents, -1), qr_code, version,
		created_at, updated_at FROM items WHERE tenant_id = ? AND sale_id = ? ORDER BY created_at, id LIMIT ?`)
	prep(&s.lastHash, `SELECT hash FROM floor_events ORDER BY seq DESC LIMIT 1`)
	prep(&s.addEv, `INSERT INTO floor_events (id, prev_hash, hash, body) VALUES (?, ?, ?, ?)`)
	prep(&s.addCand, `INSERT INTO floor_candidates (id, tenant_id, sale_id, title, created_at) VALUES (?, ?, ?, ?, ?)`)
	prep(&s.addKey, `INSERT INTO floor_keys (key, result) VALUES (?, ?)`)
	if err != nil {
		return err
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			if err := s.handle(ctx, line); err != nil {
				return err
			}
		}
		if err != nil {
			return nil // EOF: the client left
		}
	}
}

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	} `json:"params"`
}

func (s *server) handle(ctx context.Context, line []byte) error {
	var r request
	if err := json.Unmarshal(line, &r); err != nil {
		return err
	}
	if r.ID == nil {
		return nil // a notification
	}
	var result any
	switch r.Method {
	case "initialize":
		result = map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "floor", "version": "0"}}
	case "tools/list":
		var tools []map[string]any
		for _, n := range []string{"trove_list_sales", "trove_list_items", "trove_create_candidate"} {
			tools = append(tools, map[string]any{"name": n, "inputSchema": map[string]any{"type": "object"}})
		}
		result = map[string]any{"tools": tools}
	case "tools/call":
		env, err := s.call(ctx, r.Params.Name, r.Params.Arguments)
		if err != nil {
			return err
		}
		text, _ := json.Marshal(env)
		result = map[string]any{"content": []any{map[string]any{"type": "text", "text": string(text)}}, "structuredContent": json.RawMessage(text)}
	default:
		result = map[string]any{}
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": r.ID, "result": result})
	if err != nil {
		return err
	}
	s.out.Write(b)
	s.out.WriteByte('\n')
	return s.out.Flush()
}

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

// call runs one tool in one transaction: its statements, then (audit) its
// chained event, committed before the answer.
func (s *server) call(ctx context.Context, tool string, args map[string]any) (map[string]any, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var data any
	switch tool {
	case "trove_list_sales":
		rows, err := tx.StmtContext(ctx, s.sales).QueryContext(ctx, tenant)
		if err != nil {
			return nil, err
		}
		var sales []map[string]any
		for rows.Next() {
			var id, title, status, vis, city, region, postal, policy, reveal, starts, ends string
			var version int
			if err := rows.Scan(&id, &title, &status, &vis, &city, &region, &postal, &policy, &reveal, &starts, &ends, &version); err != nil {
				rows.Close()
				return nil, err
			}
			sales = append(sales, map[string]any{"id": id, "title": title, "status": status, "visibility": vis, "city": city,
				"region": region, "postal_code": postal, "address_policy": policy, "address_reveal_at": reveal,
				"starts_at": starts, "ends_at": ends, "version": version})
		}
		rows.Close()
		data = map[string]any{"sales": sales}
	case "trove_list_items":
		sale, _ := args["sale_id"].(string)
		limit := 50
		if l, ok := args["limit"].(float64); ok {
			limit = int(l)
		}
		rows, err := tx.StmtContext(ctx, s.items).QueryContext(ctx, tenant, sale, limit)
		if err != nil {
			return nil, err
		}
		var items []map[string]any
		for rows.Next() {
			var id, saleID, title, desc, cat, room, status, qr, created, updated string
			var price int64
			var version int
			if err := rows.Scan(&id, &saleID, &title, &desc, &cat, &room, &status, &price, &qr, &version, &created, &updated); err != nil {
				rows.Close()
				return nil, err
			}
			items = append(items, map[string]any{"id": id, "sale_id": saleID, "title": title, "description": desc, "category": cat,
				"room": room, "status": status, "price_cents": price, "qr_code": qr, "version": version, "created_at": created, "updated_at": updated})
		}
		rows.Close()
		data = map[string]any{"items": items}
	case "trove_create_candidate":
		sale, _ := args["sale_id"].(string)
		title, _ := args["title"].(string)
		key, _ := args["idempotency_key"].(string)
		id := newID("candidate")
		if _, err := tx.StmtContext(ctx, s.addCand).ExecContext(ctx, id, tenant, sale, title, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
			return nil, err
		}
		data = map[string]any{"candidate_id": id, "status": "pending_review"}
		res, _ := json.Marshal(data)
		if _, err := tx.StmtContext(ctx, s.addKey).ExecContext(ctx, key, string(res)); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown tool %s", tool)
	}
	evID := newID("event")
	if s.audit {
		var prev string
		if err := tx.StmtContext(ctx, s.lastHash).QueryRowContext(ctx).Scan(&prev); err != nil && err != sql.ErrNoRows {
			return nil, err
		}
		body, _ := json.Marshal(map[string]any{"id": evID, "tenant_id": tenant, "tool": map[string]any{"name": tool, "version": "1.0.0"},
			"outcome": "success", "occurred_at": time.Now().UTC().Format(time.RFC3339Nano), "actor": map[string]any{"id": "user_88", "type": "seller"},
			"client": map[string]any{"id": "mcp_client_81"}, "payload": map[string]any{"input_hash": "sha256:" + hex.EncodeToString(make([]byte, 32))}})
		sum := sha256.Sum256(append([]byte(prev), body...))
		if _, err := tx.StmtContext(ctx, s.addEv).ExecContext(ctx, evID, prev, hex.EncodeToString(sum[:]), string(body)); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return map[string]any{"status": "succeeded", "mode": "mock", "tool": map[string]any{"name": tool, "version": "1.0.0"},
		"data": data, "warnings": []any{}, "errors": []any{}, "audit": map[string]any{"event_id": evID}}, nil
}
