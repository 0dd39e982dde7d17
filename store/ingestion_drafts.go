package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// DraftListingCopy implements domain.IngestionBackend. The copy is composed
// inside the write transaction from the facts it reads, so a stored revision
// is exactly the copy computed from the record version it names.
func (s *Store) DraftListingCopy(ctx context.Context, p domain.Principal, w domain.WriteMeta, in domain.DraftRequest) (domain.DraftCreated, domain.WriteOutcome, error) {
	var zero domain.DraftCreated
	in, err := domain.CheckDraftRequest(in)
	if err != nil {
		return zero, domain.WriteOutcome{}, err
	}
	return idempotentWrite(ctx, s, p, w, func(tx *sql.Tx, now time.Time) (domain.DraftCreated, domain.Related, error) {
		var res domain.DraftCreated
		facts, err := s.draftFacts(ctx, tx, p, in)
		if err != nil {
			return res, domain.Related{}, err
		}
		res = domain.DraftCreated{SourceID: facts.SourceID, SourceKind: facts.SourceKind, SourceVersion: facts.Version,
			Copy: domain.ComposeListingCopy(facts, in.Tone, in.MaxWords)}
		rel := domain.Related{}
		if in.CandidateID != "" {
			rel.CandidateIDs = []string{in.CandidateID}
		} else {
			rel.ItemIDs = []string{in.ItemID}
		}
		if !in.Persist {
			return res, rel, nil
		}
		col := "candidate_id"
		if in.ItemID != "" {
			col = "item_id"
		}
		if err := tx.QueryRowContext(ctx, "SELECT ifnull(max(revision), 0) + 1 FROM draft_revisions WHERE "+col+" = ?", facts.SourceID).
			Scan(&res.Revision); err != nil {
			return res, rel, s.dbErr("draft: revision", err)
		}
		segs, err := json.Marshal(res.Copy.Segments)
		if err != nil {
			return res, rel, s.dbErr("draft: encode", err)
		}
		res.DraftID = s.ids.New(domain.PrefixDraft)
		res.Persisted = true
		if _, err := tx.ExecContext(ctx, `INSERT INTO draft_revisions (id, tenant_id, candidate_id, item_id, revision,
			source_version, tone, title, description, segments, created_by_client_id, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			res.DraftID, p.TenantID, nullStr(in.CandidateID), nullStr(in.ItemID), res.Revision, facts.Version, in.Tone,
			res.Copy.Title, res.Copy.Description, string(segs), p.Client.ID, ts(now)); err != nil {
			return res, rel, s.dbErr("draft: insert", err)
		}
		return res, rel, nil
	})
}

// draftFacts reads the facts of a candidate (observed) or an item (the
// seller's own, supplied).
func (s *Store) draftFacts(ctx context.Context, tx *sql.Tx, p domain.Principal, in domain.DraftRequest) (domain.DraftFacts, error) {
	f := domain.DraftFacts{Quantity: 1}
	var saleID string
	if in.CandidateID != "" {
		if err := s.checkRef(ctx, tx, "inventory_candidates", "candidate_id", in.CandidateID, p.TenantID); err != nil {
			return f, err
		}
		var kind string
		if err := tx.QueryRowContext(ctx, `SELECT sale_id, kind, title, description, category, room, condition, quantity, version
			FROM inventory_candidates WHERE id = ?`, in.CandidateID).Scan(&saleID, &kind, &f.Title, &f.Description, &f.Category,
			&f.Room, &f.Condition, &f.Quantity, &f.Version); err != nil {
			return f, s.dbErr("draft: candidate", err)
		}
		if kind != domain.CandidateNewItem {
			return f, domain.Invalid("candidate_id", "only a new_item candidate has listing copy: this one proposes a change to an item")
		}
		f.SourceID, f.SourceKind, f.Origin = in.CandidateID, "candidate", domain.OriginObserved
	} else {
		if err := s.checkRef(ctx, tx, "items", "item_id", in.ItemID, p.TenantID); err != nil {
			return f, err
		}
		if err := tx.QueryRowContext(ctx, `SELECT sale_id, title, description, category, room, version FROM items WHERE id = ?`,
			in.ItemID).Scan(&saleID, &f.Title, &f.Description, &f.Category, &f.Room, &f.Version); err != nil {
			return f, s.dbErr("draft: item", err)
		}
		f.SourceID, f.SourceKind, f.Origin = in.ItemID, "item", domain.OriginSupplied
	}
	if !p.MaySeeSale(saleID) {
		return f, fmt.Errorf("store: draft for %s: %w", f.SourceID, domain.ErrSaleAssignment)
	}
	return f, nil
}

// StageExport implements domain.IngestionBackend. It writes export_drafts
// and export_draft_items only: no item, no delivery, no publication.
func (s *Store) StageExport(ctx context.Context, p domain.Principal, w domain.WriteMeta, in domain.NewExport) (domain.ExportDraft, domain.WriteOutcome, error) {
	var zero domain.ExportDraft
	if err := domain.CheckNewExport(in); err != nil {
		return zero, domain.WriteOutcome{}, err
	}
	return idempotentWrite(ctx, s, p, w, func(tx *sql.Tx, now time.Time) (domain.ExportDraft, domain.Related, error) {
		listings := make([]domain.ExportListing, 0, len(in.ItemIDs))
		for _, id := range in.ItemIDs {
			l, err := s.exportSnapshot(ctx, tx, p, id)
			if err != nil {
				return domain.ExportDraft{}, domain.Related{}, err
			}
			listings = append(listings, l)
		}
		res := domain.StageListings(in.Channel, listings)
		res.CreatedAt = now
		res.ExportID = s.ids.New(domain.PrefixExport)
		warns, _ := json.Marshal(res.Warnings)
		if _, err := tx.ExecContext(ctx, `INSERT INTO export_drafts (id, tenant_id, channel, status, item_count, valid_count,
			warnings, created_by_client_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			res.ExportID, p.TenantID, in.Channel, domain.ExportStaged, len(res.Listings), res.ValidCount, string(warns), p.Client.ID, ts(now)); err != nil {
			return res, domain.Related{}, s.dbErr("export: draft", err)
		}
		for i, l := range res.Listings {
			snap, err := ingPayloadBytes(exportSnapshotJSON{ItemID: l.ItemID, SaleID: l.SaleID, Version: l.Version, Status: l.Status,
				Title: l.Title, Description: l.Description, Category: l.Category, PriceCents: l.PriceCents, PhotoCount: l.PhotoCount})
			if err != nil {
				return res, domain.Related{}, s.dbErr("export: encode", err)
			}
			lw, _ := json.Marshal(l.Warnings)
			if _, err := tx.ExecContext(ctx, `INSERT INTO export_draft_items (export_id, tenant_id, position, item_id, item_version,
				snapshot, valid, warnings) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
				res.ExportID, p.TenantID, i+1, l.ItemID, l.Version, string(snap), boolInt(l.Valid), string(lw)); err != nil {
				return res, domain.Related{}, s.dbErr("export: item", err)
			}
		}
		return res, domain.Related{ItemIDs: slices.Clone(in.ItemIDs)}, nil
	})
}

// exportSnapshotJSON is the frozen public snapshot of one staged item, as
// export_draft_items.snapshot keeps it.
type exportSnapshotJSON struct {
	ItemID      string `json:"item_id"`
	SaleID      string `json:"sale_id"`
	Version     int    `json:"version"`
	Status      string `json:"status"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Category    string `json:"category"`
	PriceCents  *int64 `json:"price_cents"`
	PhotoCount  int    `json:"photo_count"`
}

// exportSnapshot reads the public fields of an item of the tenant (never
// internal pricing, notes or unpublished photos).
func (s *Store) exportSnapshot(ctx context.Context, tx *sql.Tx, p domain.Principal, itemID string) (domain.ExportListing, error) {
	var l domain.ExportListing
	if err := s.checkRef(ctx, tx, "items", "item_ids", itemID, p.TenantID); err != nil {
		return l, err
	}
	var price sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT id, sale_id, version, status, title, description, category, price_cents,
		(SELECT count(*) FROM item_photos ph WHERE ph.tenant_id = items.tenant_id AND ph.item_id = items.id AND ph.published = 1)
		FROM items WHERE id = ?`, itemID).Scan(&l.ItemID, &l.SaleID, &l.Version, &l.Status, &l.Title, &l.Description,
		&l.Category, &price, &l.PhotoCount); err != nil {
		return l, s.dbErr("export: item", err)
	}
	if !p.MaySeeSale(l.SaleID) {
		return l, fmt.Errorf("store: item %s: %w", itemID, domain.ErrSaleAssignment)
	}
	l.PriceCents = intPtr(price)
	return l, nil
}
