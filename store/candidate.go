package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Vocabulary of the candidate chain for MCP-originated candidates.
const (
	sourceKindMCP   = "mcp_client"
	importKindMCP   = "mcp"
	importCompleted = "completed"
)

// CreateCandidate runs the P5 candidate chain in ONE write transaction:
//
//  1. idempotency: a live row for w.Idem with the same fingerprint replays
//     the stored result and writes nothing; another fingerprint is
//     ErrIdempotencyConflict, nothing written;
//  2. the sale must belong to the principal's tenant (RefError otherwise);
//  3. the MCP source descriptor of (tenant, client) is reused or created, then
//     an import run (kind mcp, completed, 1 record), a source record holding
//     the canonical JSON of in, and the candidate (needs_review, version 1);
//  4. w.Event is inserted with Outcome success and Related filled;
//  5. the idempotency row keeps the result for replays.
//
// The transaction is BEGIN IMMEDIATE and the lookup of step 1 runs inside
// it, so two processes racing on one key serialise: the second sees the
// first's row and replays. It never touches items: promotion to a canonical
// item is a separate, reviewed step.
func (s *Store) CreateCandidate(ctx context.Context, p domain.Principal, w domain.WriteMeta, in domain.NewCandidate) (domain.CandidateCreated, domain.WriteOutcome, error) {
	var (
		res domain.CandidateCreated
		out domain.WriteOutcome
	)
	if err := in.Validate(); err != nil {
		return res, out, err
	}
	payload, err := canonicalJSON(in)
	if err != nil {
		return res, out, fmt.Errorf("store: create candidate: encode input: %w", domain.ErrInvalidInput)
	}

	return idempotentWrite(ctx, s, p, w, func(tx *sql.Tx, now time.Time) (domain.CandidateCreated, domain.Related, error) {
		var res domain.CandidateCreated
		if err := s.checkRef(ctx, tx, "estate_sales", "sale_id", in.SaleID, p.TenantID); err != nil {
			return res, domain.Related{}, err
		}
		if !p.MaySeeSale(in.SaleID) { // §4.3: a sale-scoped member writes only into assigned sales
			return res, domain.Related{}, fmt.Errorf("store: sale %s: %w", in.SaleID, domain.ErrSaleAssignment)
		}
		descID, err := s.mcpDescriptor(ctx, tx, p, now)
		if err != nil {
			return res, domain.Related{}, err
		}
		runID := s.ids.New(domain.PrefixRun)
		if _, err := tx.ExecContext(ctx, `INSERT INTO import_runs (id, tenant_id, source_descriptor_id, sale_id, kind, status,
			record_count, created_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?)`,
			runID, p.TenantID, descID, in.SaleID, importKindMCP, importCompleted, ts(now)); err != nil {
			return res, domain.Related{}, s.dbErr("create candidate: import run", err)
		}
		recordID := s.ids.New(domain.PrefixRecord)
		sum := sha256.Sum256(payload)
		if _, err := tx.ExecContext(ctx, `INSERT INTO source_records (id, tenant_id, import_run_id, ordinal, payload_hash, payload,
			created_at) VALUES (?, ?, ?, 1, ?, ?, ?)`,
			recordID, p.TenantID, runID, "sha256:"+hex.EncodeToString(sum[:]), string(payload), ts(now)); err != nil {
			return res, domain.Related{}, s.dbErr("create candidate: source record", err)
		}
		cand := domain.Candidate{
			ID: s.ids.New(domain.PrefixCandidate), TenantID: p.TenantID, SaleID: in.SaleID, Kind: domain.CandidateNewItem,
			Title: in.Title, Description: in.Description, Category: in.Category, Room: in.Room, Condition: in.Condition,
			Quantity: atLeastOne(in.Quantity), SuppliedPriceCents: in.SuppliedPriceCents, Notes: in.Notes,
			ReviewStatus: domain.ReviewNeedsReview, SourceDescriptorID: descID, ImportRunID: runID, SourceRecordID: recordID,
			CreatedByClientID: p.Client.ID, Version: 1, CreatedAt: now,
		}
		if err := insertCandidate(ctx, tx, cand); err != nil {
			return res, domain.Related{}, s.dbErr("create candidate: candidate", err)
		}
		res = domain.CandidateCreated{
			CandidateID: cand.ID, ReviewStatus: cand.ReviewStatus, CanonicalItemCreated: false,
			SourceDescriptorID: descID, ImportRunID: runID, SourceRecordID: recordID, SaleID: in.SaleID,
		}
		return res, domain.Related{SourceImportRunIDs: []string{runID}, SourceImportRecordIDs: []string{recordID}, CandidateIDs: []string{cand.ID}}, nil
	})
}

// checkClientActive re-reads the principal's client inside the write
// transaction: a suspension committed after the gate resolved the principal
// still stops the write.
func (s *Store) checkClientActive(ctx context.Context, tx *sql.Tx, p domain.Principal) error {
	var status string
	err := tx.QueryRowContext(ctx, "SELECT status FROM mcp_clients WHERE id = ? AND tenant_id = ?", p.Client.ID, p.TenantID).Scan(&status)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: client %s: %w", p.Client.ID, domain.ErrClientNotRegistered)
	}
	if err != nil {
		return s.dbErr("check client", err)
	}
	switch status {
	case domain.ClientActive:
		return nil
	case domain.ClientSuspended:
		return fmt.Errorf("store: client %s: %w", p.Client.ID, domain.ErrClientSuspended)
	default:
		return fmt.Errorf("store: client %s is %s: %w", p.Client.ID, status, domain.ErrClientNotRegistered)
	}
}

// mcpDescriptor returns the one source descriptor of kind mcp_client for the
// principal's (tenant, client), creating it on first use. A unique partial
// index backs the "one" across processes.
func (s *Store) mcpDescriptor(ctx context.Context, tx *sql.Tx, p domain.Principal, now time.Time) (string, error) {
	var id string
	err := tx.QueryRowContext(ctx, "SELECT id FROM source_descriptors WHERE tenant_id = ? AND client_id = ? AND kind = ?",
		p.TenantID, p.Client.ID, sourceKindMCP).Scan(&id)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", s.dbErr("source descriptor", err)
	}
	id = s.ids.New(domain.PrefixSource)
	label := p.Client.Name
	if label == "" {
		label = p.Client.ID
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO source_descriptors (id, tenant_id, kind, client_id, label, created_at)
		VALUES (?, ?, ?, ?, ?, ?)`, id, p.TenantID, sourceKindMCP, p.Client.ID, "MCP client "+label, ts(now)); err != nil {
		return "", s.dbErr("source descriptor", err)
	}
	return id, nil
}

// canonicalJSON encodes v with sorted object keys and no HTML escaping, so
// equal inputs always give equal bytes (and equal payload hashes).
func canonicalJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep integers exact
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(generic); err != nil { // maps encode with sorted keys
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
