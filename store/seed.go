package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// table is one table of the schema and the order that makes its rows
// deterministic (its primary key).
type table struct {
	name    string
	orderBy string
}

// tables lists every table of the schema, parents before children: seeding
// inserts in this order and Reset deletes in the reverse one. Counts and
// Digest report exactly these (a test checks the list against sqlite_schema,
// so a table added by a migration cannot be forgotten here).
var tables = slices.Concat(tables0001, tables0002, tablesReads, tablesIngestion, tablesApprovals, tablesOutbox, tablesPassphrase, tablesQuota)

// tables0001 and tables0002 are the tables of the first two migrations;
// later migrations list theirs beside their code (tables_*.go).
var tables0001 = []table{
	{"store_meta", "key"},
	{"tenants", "id"},
	{"users", "id"},
	{"memberships", "id"},
	{"mcp_clients", "id"},
	{"estate_sales", "id"},
	{"items", "id"},
	{"item_photos", "id"},
	{"source_descriptors", "id"},
	{"import_runs", "id"},
	{"source_records", "id"},
	{"inventory_candidates", "id"},
	{"demand_signals", "id"},
	{"plugin_events", "seq"},
	{"idempotency_keys", "tenant_id, client_id, tool, tool_major, key"},
}

var tables0002 = []table{
	{"mcp_limits", "tenant_id, client_id"},
	{"rate_counters", "bucket, class, window_start"},
	{"client_activity", "client_id"},
}

// BookkeepingTables change on every call, whatever it does: the call's own
// audit event, its rate-limit count and the client's last-use time. "Nothing
// changed" means every other table is unchanged.
var BookkeepingTables = []string{"plugin_events", "rate_counters", "client_activity"}

// store_meta keys.
const (
	metaInitializedAt = "initialized_at" // set once, by the start-up that created the database
	metaSeedDigest    = "seed_digest"    // DatasetDigest of the dataset last seeded
	metaSeededAt      = "seeded_at"
)

// initialize finishes the creation of a new database: it seeds opts.Seed and
// records that it did, in one transaction. The check runs inside the write
// lock, so when two processes create the file at once exactly one seeds; and
// a start-up that crashed between migration and seeding is completed by the
// next one.
func (s *Store) initialize(ctx context.Context, seed *domain.Dataset, seedFn func() domain.Dataset) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.openErr("initialize: begin", err)
	}
	defer func() { _ = tx.Rollback() }()
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM store_meta WHERE key = ?", metaInitializedAt).Scan(&n); err != nil {
		return s.openErr("initialize: read meta", err)
	}
	if n > 0 {
		return nil
	}
	now := s.clock.Now()
	if seed == nil && seedFn != nil {
		d := seedFn()
		seed = &d
	}
	if seed != nil {
		if err := insertDataset(ctx, tx, *seed); err != nil {
			return fmt.Errorf("store: open %s: seed: %w", s.path, err)
		}
		if err := putSeedMeta(ctx, tx, *seed, now); err != nil {
			return s.openErr("initialize: write meta", err)
		}
	}
	if err := putMeta(ctx, tx, metaInitializedAt, ts(now)); err != nil {
		return s.openErr("initialize: write meta", err)
	}
	if err := tx.Commit(); err != nil {
		return s.openErr("initialize: commit", err)
	}
	return nil
}

// ResetAction is the action of the event that opens the audit log after a
// reset.
const ResetAction = "fixtures_reset"

// ResetResult is what a reset discarded, as its event records it.
type ResetResult struct {
	// DiscardedEvents is the number of plugin_events deleted, all chains.
	DiscardedEvents int64
	// OldHeads are the heads of the chains as they were before the reset.
	OldHeads []domain.ChainHead
	// EventID is the event that records the reset: the first of the new log.
	EventID string
}

// Reset is `trovesnap fixtures reset`: in ONE transaction it empties every
// table — plugin_events included, whose append-only triggers are dropped and
// recreated inside the same transaction — seeds ds, and records the reset
// as the first event of the new log (action fixtures_reset, in the chain of
// no tenant, since a reset is of the whole file): by whom, when, how many
// events were discarded and the head of every discarded chain, so the loss
// is on the record rather than an empty, "intact" chain. Apart from that
// event the database answers exactly like a freshly created one seeded with
// ds; a failure leaves it as it was. Reset is refused in live mode, where
// the file holds the replay cache and outbox of real calls. by names who
// asked (the OS user at the terminal).
func (s *Store) Reset(ctx context.Context, ds domain.Dataset, by string) (ResetResult, error) {
	var res ResetResult
	if s.mode == domain.ModeLive {
		return res, fmt.Errorf("store: %w", domain.Because(domain.ErrPermissionDenied, "reset is a mock-mode operation"))
	}
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		res = ResetResult{}
		heads, err := chainHeads(ctx, tx)
		if err != nil {
			return s.dbErr("reset: chain heads", err)
		}
		res.OldHeads = heads
		for _, h := range heads {
			res.DiscardedEvents += h.Events
		}
		// Take the trigger definitions from the schema itself, so Reset
		// restores exactly what the migrations created, whatever they become.
		type trigger struct{ name, sql string }
		var triggers []trigger
		rows, err := tx.QueryContext(ctx, "SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' ORDER BY name")
		if err != nil {
			return s.dbErr("reset: read triggers", err)
		}
		for rows.Next() {
			var t trigger
			if err := rows.Scan(&t.name, &t.sql); err != nil {
				_ = rows.Close()
				return s.dbErr("reset: read triggers", err)
			}
			triggers = append(triggers, t)
		}
		if err := rows.Close(); err != nil {
			return s.dbErr("reset: read triggers", err)
		}
		for _, t := range triggers {
			if _, err := tx.ExecContext(ctx, `DROP TRIGGER "`+t.name+`"`); err != nil {
				return s.dbErr("reset: drop trigger", err)
			}
		}
		// Children first (tables lists parents first). Foreign keys stay
		// checked immediately, so a bad dataset fails on the row that is
		// wrong, with its id in the error.
		for i := len(tables) - 1; i >= 0; i-- {
			if keptOnReset[tables[i].name] {
				continue
			}
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+tables[i].name); err != nil {
				return s.dbErr("reset: delete "+tables[i].name, err)
			}
		}
		// AUTOINCREMENT counters too: event seq restarts at 1 as in a new file.
		if _, err := tx.ExecContext(ctx, "DELETE FROM sqlite_sequence"); err != nil {
			return s.dbErr("reset: sequences", err)
		}
		for _, t := range triggers {
			if _, err := tx.ExecContext(ctx, t.sql); err != nil {
				return s.dbErr("reset: recreate trigger", err)
			}
		}
		if err := insertDataset(ctx, tx, ds); err != nil {
			return fmt.Errorf("store: reset: seed: %w: %w", domain.ErrInvalidInput, err)
		}
		now := s.clock.Now()
		if err := putSeedMeta(ctx, tx, ds, now); err != nil {
			return s.dbErr("reset: meta", err)
		}
		if err := putMeta(ctx, tx, metaInitializedAt, ts(now)); err != nil {
			return s.dbErr("reset: meta", err)
		}
		ev := resetEvent(s.ids.New(domain.PrefixEvent), s.ids.New(domain.PrefixCorr), by, now, res)
		res.EventID = ev.ID
		return s.insertEvent(ctx, tx, ev)
	})
	if err != nil {
		return ResetResult{}, err
	}
	return res, nil
}

// resetEvent is the first event after a reset. Its summary names what was
// lost: the number of events, and per discarded chain its head
// ("old_head.<tenant>", "_" for the chain of no tenant) as
// "seq:<n> id:<event> hash:<sha256:…> events:<n>"; old_head_hash is the head
// of the newest event of the file, the one a saved `audit head` most likely
// holds.
func resetEvent(id, corr, by string, now time.Time, r ResetResult) domain.Event {
	sum := map[string]string{
		"discarded_events": fmt.Sprint(r.DiscardedEvents),
		"discarded_chains": fmt.Sprint(len(r.OldHeads)),
	}
	var newest domain.ChainHead
	for _, h := range r.OldHeads {
		tenant := h.TenantID
		if tenant == "" {
			tenant = "_"
		}
		sum["old_head."+tenant] = fmt.Sprintf("seq:%d id:%s hash:%s events:%d", h.Seq, h.EventID, h.EventHash, h.Events)
		if h.Seq > newest.Seq {
			newest = h
		}
	}
	if newest.EventHash != "" {
		sum["old_head_hash"] = newest.EventHash
	}
	if by == "" {
		by = "unknown"
	}
	return domain.Event{
		ID: id, CorrelationID: corr, Mode: domain.ModeMock,
		Plugin:     domain.PluginRef{Type: "mcp", ID: "trovesnap", Version: "cli"},
		Actor:      domain.ActorRef{ID: by, Type: "local_user"},
		Action:     ResetAction,
		Outcome:    domain.OutcomeSuccess,
		Payload:    domain.EventPayload{RedactedSummary: sum},
		Approval:   domain.EventApproval{Decision: "not_required"},
		Impact:     domain.EventImpact{Type: ResetAction, Material: true, CanonicalStateChanged: true},
		OccurredAt: now,
		Domain:     &domain.EventDomain{Service: "fixtures", Operation: ResetAction},
	}
}

// DatasetDigest identifies a dataset: "sha256:" + hex of its JSON encoding.
// store_meta keeps the digest of the last seed so `doctor` can tell which
// fixtures a database holds.
func DatasetDigest(ds domain.Dataset) string {
	b, err := json.Marshal(ds)
	if err != nil { // a Dataset holds only JSON-safe values
		panic(err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func putMeta(ctx context.Context, tx *sql.Tx, key, value string) error {
	_, err := tx.ExecContext(ctx,
		"INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", key, value)
	return err
}

func putSeedMeta(ctx context.Context, tx *sql.Tx, ds domain.Dataset, now time.Time) error {
	if err := putMeta(ctx, tx, metaSeedDigest, DatasetDigest(ds)); err != nil {
		return err
	}
	return putMeta(ctx, tx, metaSeededAt, ts(now))
}

// insertDataset inserts ds row by row. Its errors name the record that
// failed, with the driver's reason: a bad seed is a fixtures bug that an
// engineer reads at start-up, never an answer to a model.
//
// Normalisations, so a sparse fixture stays valid: a version of 0 is stored
// as 1 (every record starts at version 1), a candidate quantity of 0 as 1,
// a photo without ItemID belongs to the item that lists it, an empty
// allowed-tool-groups list is [].
func insertDataset(ctx context.Context, tx *sql.Tx, ds domain.Dataset) error {
	ins := func(what, id, query string, args ...any) error {
		if _, err := tx.ExecContext(ctx, query, args...); err != nil {
			return fmt.Errorf("%s %q: %v", what, id, err)
		}
		return nil
	}
	// Sales and items feed the search index through triggers: start it
	// afresh first (reads_seed.go).
	if err := rebuildSearchIndex(ctx, tx); err != nil {
		return err
	}
	for _, t := range ds.Tenants {
		if err := ins("tenant", t.ID, "INSERT INTO tenants (id, name) VALUES (?, ?)", t.ID, t.Name); err != nil {
			return err
		}
	}
	for _, u := range ds.Users {
		if err := ins("user", u.ID, "INSERT INTO users (id, display_name, email) VALUES (?, ?, ?)", u.ID, u.DisplayName, u.Email); err != nil {
			return err
		}
	}
	for _, m := range ds.Memberships {
		if err := ins("membership", m.ID, "INSERT INTO memberships (id, tenant_id, user_id, role) VALUES (?, ?, ?, ?)",
			m.ID, m.TenantID, m.UserID, m.Role); err != nil {
			return err
		}
	}
	for _, c := range ds.Clients {
		groups := c.AllowedToolGroups
		if groups == nil {
			groups = []string{}
		}
		gj, _ := json.Marshal(groups)
		pols := c.ApprovalPolicyIDs
		if pols == nil {
			pols = []string{}
		}
		pj, _ := json.Marshal(pols)
		trust, risk := c.TrustLevel, c.RiskClass
		if trust == "" {
			trust = "standard_client"
		}
		if risk == "" {
			risk = "standard"
		}
		if err := ins("client", c.ID, `INSERT INTO mcp_clients (id, tenant_id, source_connection_id, name, client_type, status,
			actor_id, allowed_tool_groups, demo, created_by, created_at, credential_hash, approval_policy_ids, trust_level, risk_class)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.TenantID, c.SourceConnectionID, c.Name, c.ClientType, c.Status, c.ActorID, string(gj),
			boolInt(c.Demo), c.CreatedBy, ts(c.CreatedAt), nullStr(c.CredentialHash), string(pj), trust, risk); err != nil {
			return err
		}
	}
	for _, sl := range ds.Sales {
		if err := ins("sale", sl.ID, `INSERT INTO estate_sales (id, tenant_id, title, status, visibility, city, region, postal_code,
			street_address, address_policy, address_reveal_at, starts_at, ends_at, version, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			sl.ID, sl.TenantID, sl.Title, sl.Status, sl.Visibility, sl.City, sl.Region, sl.PostalCode, sl.StreetAddress,
			sl.AddressPolicy, tsPtr(sl.AddressRevealAt), ts(sl.StartsAt), ts(sl.EndsAt), atLeastOne(sl.Version),
			ts(sl.CreatedAt), ts(sl.UpdatedAt)); err != nil {
			return err
		}
	}
	for _, it := range ds.Items {
		if err := ins("item", it.ID, `INSERT INTO items (id, tenant_id, sale_id, title, description, category, room, status,
			price_cents, internal_price_guidance_cents, cost_basis_cents, appraisal_flag, staff_notes, qr_code, version,
			created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			it.ID, it.TenantID, it.SaleID, it.Title, it.Description, it.Category, it.Room, it.Status,
			nullInt(it.PriceCents), nullInt(it.InternalPriceGuidanceCents), nullInt(it.CostBasisCents),
			boolInt(it.AppraisalFlag), it.StaffNotes, it.QRCode, atLeastOne(it.Version),
			ts(it.CreatedAt), ts(it.UpdatedAt)); err != nil {
			return err
		}
		for _, ph := range it.Photos {
			itemID := ph.ItemID
			if itemID == "" {
				itemID = it.ID
			}
			if err := ins("photo", ph.ID, `INSERT INTO item_photos (id, tenant_id, item_id, storage_key, width, height, position, published)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
				ph.ID, it.TenantID, itemID, ph.StorageKey, ph.Width, ph.Height, ph.Position, boolInt(ph.Published)); err != nil {
				return err
			}
		}
	}
	for _, d := range ds.SourceDescriptors {
		if err := ins("source descriptor", d.ID, `INSERT INTO source_descriptors (id, tenant_id, kind, client_id, label, created_at)
			VALUES (?, ?, ?, ?, ?, ?)`, d.ID, d.TenantID, d.Kind, nullStr(d.ClientID), d.Label, ts(d.CreatedAt)); err != nil {
			return err
		}
	}
	for _, r := range ds.ImportRuns {
		if err := ins("import run", r.ID, `INSERT INTO import_runs (id, tenant_id, source_descriptor_id, sale_id, kind, status,
			record_count, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.TenantID, r.SourceDescriptorID, nullStr(r.SaleID), r.Kind, r.Status, r.RecordCount, ts(r.CreatedAt)); err != nil {
			return err
		}
	}
	for _, r := range ds.SourceRecords {
		if err := ins("source record", r.ID, `INSERT INTO source_records (id, tenant_id, import_run_id, ordinal, payload_hash,
			payload, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.TenantID, r.ImportRunID, r.Ordinal, r.PayloadHash, r.Payload, ts(r.CreatedAt)); err != nil {
			return err
		}
	}
	for _, c := range ds.Candidates {
		if err := insertCandidate(ctx, tx, c); err != nil {
			return fmt.Errorf("candidate %q: %v", c.ID, err)
		}
	}
	for _, d := range ds.DemandSignals {
		if err := ins("demand signal", d.TenantID+"/"+d.SaleID+"/"+d.Category, `INSERT INTO demand_signals (tenant_id, sale_id,
			category, saves, searches, follows, window_start, window_end) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			d.TenantID, nullStr(d.SaleID), d.Category, d.Saves, d.Searches, d.Follows, ts(d.WindowStart), ts(d.WindowEnd)); err != nil {
			return err
		}
	}
	return insertReadDataset(ctx, tx, ds)
}

// insertCandidate is shared by seeding and the candidate chain.
func insertCandidate(ctx context.Context, tx *sql.Tx, c domain.Candidate) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO inventory_candidates (id, tenant_id, sale_id, kind, title, description, category,
		room, condition, quantity, supplied_price_cents, notes, review_status, source_descriptor_id, import_run_id,
		source_record_id, created_by_client_id, version, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.ID, c.TenantID, c.SaleID, c.Kind, c.Title, c.Description, c.Category, c.Room, c.Condition, atLeastOne(c.Quantity),
		nullInt(c.SuppliedPriceCents), c.Notes, c.ReviewStatus, nullStr(c.SourceDescriptorID), nullStr(c.ImportRunID),
		nullStr(c.SourceRecordID), nullStr(c.CreatedByClientID), atLeastOne(c.Version), ts(c.CreatedAt))
	return err
}

func atLeastOne(n int) int {
	if n < 1 {
		return 1
	}
	return n
}
