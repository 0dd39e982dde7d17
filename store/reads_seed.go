package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// rebuildSearchIndex drops and recreates the marketplace FTS table from its
// own stored definition, before a dataset is inserted. Reset empties every
// table row by row, FTS5's shadow tables included, which leaves FTS5 without
// the configuration it needs; a recreated table is exactly the one the
// migration made, so a reset database indexes (and digests) byte for byte
// like a fresh one. It runs inside the seeding transaction.
func rebuildSearchIndex(ctx context.Context, tx *sql.Tx) error {
	var def string
	if err := tx.QueryRowContext(ctx, "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'search_fts'").Scan(&def); err != nil {
		return fmt.Errorf("search index definition: %v", err)
	}
	if _, err := tx.ExecContext(ctx, "DROP TABLE search_fts"); err != nil {
		return fmt.Errorf("drop search index: %v", err)
	}
	if _, err := tx.ExecContext(ctx, def); err != nil {
		return fmt.Errorf("recreate search index: %v", err)
	}
	return nil
}

// insertReadDataset inserts the read tools' fixture collections (sale
// scopes, pricing and status history, label batches) after the rest of the
// dataset, whose rows they reference. Like insertDataset, errors name the
// record and keep the driver's reason: they reach an engineer, not a model.
func insertReadDataset(ctx context.Context, tx *sql.Tx, ds domain.Dataset) error {
	ins := func(what, id, query string, args ...any) error {
		if _, err := tx.ExecContext(ctx, query, args...); err != nil {
			return fmt.Errorf("%s %q: %v", what, id, err)
		}
		return nil
	}
	for _, sc := range ds.SaleScopes {
		res, err := tx.ExecContext(ctx, "UPDATE memberships SET sale_scoped = 1 WHERE id = ? AND tenant_id = ?", sc.MembershipID, sc.TenantID)
		if err != nil {
			return fmt.Errorf("sale scope %q: %v", sc.MembershipID, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return fmt.Errorf("sale scope %q: no such membership in tenant %q", sc.MembershipID, sc.TenantID)
		}
		for _, saleID := range sc.SaleIDs {
			if err := ins("sale scope", sc.MembershipID+"/"+saleID, `INSERT INTO membership_sales (membership_id, tenant_id, sale_id)
				VALUES (?, ?, ?)`, sc.MembershipID, sc.TenantID, saleID); err != nil {
				return err
			}
		}
	}
	for _, pc := range ds.PriceChanges {
		if err := ins("price change", pc.ID, `INSERT INTO item_price_history (id, tenant_id, item_id, price_cents,
			internal_price_guidance_cents, reason, actor_id, proposal_id, changed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			pc.ID, pc.TenantID, pc.ItemID, nullInt(pc.PriceCents), nullInt(pc.InternalPriceGuidanceCents), pc.Reason,
			pc.ActorID, pc.ProposalID, ts(pc.ChangedAt)); err != nil {
			return err
		}
	}
	for _, ev := range ds.StatusEvents {
		if err := insertStatusEvent(ctx, tx, ev); err != nil {
			return fmt.Errorf("status event %q: %v", ev.ID, err)
		}
	}
	for _, b := range ds.LabelBatches {
		if err := ins("label batch", b.ID, `INSERT INTO label_batches (id, tenant_id, sale_id, status, created_at, printed_at)
			VALUES (?, ?, ?, ?, ?, ?)`, b.ID, b.TenantID, b.SaleID, b.Status, ts(b.CreatedAt), tsPtr(b.PrintedAt)); err != nil {
			return err
		}
		for i, code := range b.Codes {
			if err := ins("qr label", code, "INSERT INTO qr_labels (code, tenant_id, batch_id, ordinal) VALUES (?, ?, ?, ?)",
				code, b.TenantID, b.ID, i+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// insertStatusEvent appends one status event. It is the one insert of the
// table, shared by seeding and (later) append_inventory_status_event.
func insertStatusEvent(ctx context.Context, tx *sql.Tx, ev domain.StatusEvent) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO item_status_events (id, tenant_id, item_id, sale_id, from_status, to_status,
		effective_at, source_type, actor_id, proposal_id, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		ev.ID, ev.TenantID, ev.ItemID, ev.SaleID, ev.FromStatus, ev.ToStatus, ts(ev.EffectiveAt), ev.SourceType,
		ev.ActorID, ev.ProposalID, ts(ev.RecordedAt))
	return err
}
