package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// Source assets (spec §29): uploaded bytes that passed the photo checks
// (internal/ingest, run by the catalog before the Backend call) are stored
// as files under the data directory, on a path the store chooses from the
// tenant and the content hash — never a path or name from the client:
//
//	<dir of the database>/assets/<tenant>/<first two hex digits>/<sha256 hex>.<ext>
//
// Content addressing deduplicates (one row and one file per tenant and
// hash) and makes every write of a file the same bytes, so writing it again
// is harmless. A file is written atomically (temporary file, fsync, rename)
// inside the write transaction, BEFORE the transaction commits: a committed
// asset row always has its file. If the transaction then fails inside the
// store's write step, a file it created for a new asset is removed; if a
// later step (the event, the key row, the commit itself) fails, the file
// stays as an orphan that no row names and that the next upload of the same
// bytes reuses — never a row without its file.

// assetExt is the extension stored for each accepted type: chosen by the
// store from the sniffed type, never taken from the client.
var assetExt = map[string]string{"image/jpeg": "jpg", "image/png": "png", "image/gif": "gif", "image/webp": "webp"}

var (
	assetTenantRE = domain.LazyRegexp(`^[A-Za-z0-9_]{1,80}$`)
	assetHashRE   = domain.LazyRegexp(`^sha256:[0-9a-f]{64}$`)
)

// AssetsDir is the directory that holds every source asset file.
func (s *Store) AssetsDir() string { return filepath.Join(filepath.Dir(s.path), "assets") }

// assetRelPath is an asset's storage path, relative to the database's
// directory. Its parts are checked, so it can never leave AssetsDir.
func assetRelPath(tenantID, hash, mime string) (string, error) {
	ext, ok := assetExt[mime]
	if !ok || !assetTenantRE().MatchString(tenantID) || !assetHashRE().MatchString(hash) {
		return "", fmt.Errorf("store: asset path: %w", domain.ErrInvalidInput)
	}
	hex := strings.TrimPrefix(hash, "sha256:")
	return "assets/" + tenantID + "/" + hex[:2] + "/" + hex + "." + ext, nil
}

// writeAssetFile makes sure the file at rel holds data, writing it
// atomically when it is missing or has another size. It reports whether it
// wrote the file.
func (s *Store) writeAssetFile(rel string, data []byte) (bool, error) {
	path := filepath.Join(filepath.Dir(s.path), filepath.FromSlash(rel))
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(data)) {
		return false, nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, s.fsErr("asset directory", err)
	}
	tmp, err := os.CreateTemp(dir, ".upload-*")
	if err != nil {
		return false, s.fsErr("asset temp file", err)
	}
	tmpName := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			_ = tmp.Close()
			_ = os.Remove(tmpName)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return false, s.fsErr("asset write", err)
	}
	if err := tmp.Sync(); err != nil {
		return false, s.fsErr("asset sync", err)
	}
	if err := tmp.Close(); err != nil {
		return false, s.fsErr("asset close", err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		return false, s.fsErr("asset rename", err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil { // make the rename durable too (best effort)
		_ = d.Sync()
		_ = d.Close()
	}
	return true, nil
}

// fsErr is a file-system failure: logged, answered as unavailable (no path
// reaches a model).
func (s *Store) fsErr(op string, err error) error {
	s.log.Debug("store: file error", "op", op, "err", err)
	return fmt.Errorf("store: %s: %w", op, domain.ErrUnavailable)
}

// assetRow is a stored source asset.
type assetRow struct {
	id, hash, mime, path string
	size, width, height  int
}

// ingAsset resolves the asset of a media write: an asset of the tenant by
// id, or the uploaded bytes — reusing the tenant's asset of the same hash
// or storing a new one within the tenant's quota. created names a file this
// call wrote, which the caller removes if its transaction fails.
func (s *Store) ingAsset(ctx context.Context, tx *sql.Tx, p domain.Principal, in domain.NewCandidateMedia, now time.Time) (a assetRow, reused bool, created string, err error) {
	const cols = "id, sha256, mime_type, storage_path, byte_size, width, height"
	scan := func(row *sql.Row) error {
		return row.Scan(&a.id, &a.hash, &a.mime, &a.path, &a.size, &a.width, &a.height)
	}
	if in.AssetID != "" {
		if err := s.checkRef(ctx, tx, "source_assets", "asset_id", in.AssetID, p.TenantID); err != nil {
			return a, false, "", err
		}
		if err := scan(tx.QueryRowContext(ctx, "SELECT "+cols+" FROM source_assets WHERE id = ?", in.AssetID)); err != nil {
			return a, false, "", s.dbErr("asset", err)
		}
		return a, true, "", nil
	}
	up := in.Upload
	rel, err := assetRelPath(p.TenantID, up.ContentHash, up.MimeType)
	if err != nil {
		return a, false, "", err
	}
	err = scan(tx.QueryRowContext(ctx, "SELECT "+cols+" FROM source_assets WHERE tenant_id = ? AND sha256 = ?", p.TenantID, up.ContentHash))
	switch {
	case err == nil:
		// Restore the file if someone deleted it. It is not reported as
		// created: a committed row needs it even if this call fails.
		if _, err := s.writeAssetFile(a.path, up.Bytes); err != nil {
			return a, false, "", err
		}
		return a, true, "", nil
	case !errors.Is(err, sql.ErrNoRows):
		return a, false, "", s.dbErr("asset", err)
	}
	var used int64
	if err := tx.QueryRowContext(ctx, "SELECT ifnull(sum(byte_size), 0) FROM source_assets WHERE tenant_id = ?", p.TenantID).Scan(&used); err != nil {
		return a, false, "", s.dbErr("asset quota", err)
	}
	if used+int64(up.Size) > domain.MaxTenantMediaBytes {
		return a, false, "", domain.Invalid("image_base64", fmt.Sprintf("the tenant's media quota of %d bytes is full", int64(domain.MaxTenantMediaBytes)))
	}
	a = assetRow{id: s.ids.New(domain.PrefixAsset), hash: up.ContentHash, mime: up.MimeType, path: rel, size: up.Size, width: up.Width, height: up.Height}
	wrote, err := s.writeAssetFile(rel, up.Bytes)
	if err != nil {
		return a, false, "", err
	}
	if wrote {
		created = rel
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO source_assets (id, tenant_id, sha256, mime_type, byte_size, width, height,
		storage_path, created_by_client_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.id, p.TenantID, a.hash, a.mime, a.size, a.width, a.height, a.path, p.Client.ID, ts(now)); err != nil {
		return a, false, created, s.dbErr("asset insert", err)
	}
	return a, false, created, nil
}

// attachMedia attaches asset a to candidate candID (idempotently per pair)
// and reports the media id and whether it was attached before.
func (s *Store) attachMedia(ctx context.Context, tx *sql.Tx, p domain.Principal, candID string, a assetRow, caption string, now time.Time) (string, bool, error) {
	var existing string
	err := tx.QueryRowContext(ctx, "SELECT id FROM candidate_media WHERE candidate_id = ? AND asset_id = ?", candID, a.id).Scan(&existing)
	if err == nil {
		return existing, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", false, s.dbErr("candidate media", err)
	}
	var count, last int
	if err := tx.QueryRowContext(ctx, "SELECT count(*), ifnull(max(position), 0) FROM candidate_media WHERE candidate_id = ?", candID).Scan(&count, &last); err != nil {
		return "", false, s.dbErr("candidate media", err)
	}
	if count >= domain.MaxPhotosPerCandidate {
		return "", false, domain.Invalid("candidate_id", fmt.Sprintf("the candidate already has %d photos, the most it may have", domain.MaxPhotosPerCandidate))
	}
	id := s.ids.New(domain.PrefixMedia)
	if _, err := tx.ExecContext(ctx, `INSERT INTO candidate_media (id, tenant_id, candidate_id, asset_id, caption, position,
		created_by_client_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		id, p.TenantID, candID, a.id, caption, last+1, p.Client.ID, ts(now)); err != nil {
		return "", false, s.dbErr("candidate media", err)
	}
	return id, false, nil
}

// removeCreated deletes a file this call wrote when its transaction fails.
func (s *Store) removeCreated(rel string) {
	if rel != "" {
		_ = os.Remove(filepath.Join(filepath.Dir(s.path), filepath.FromSlash(rel)))
	}
}

// AttachCandidateMedia implements domain.IngestionBackend.
func (s *Store) AttachCandidateMedia(ctx context.Context, p domain.Principal, w domain.WriteMeta, in domain.NewCandidateMedia) (domain.CandidateMediaCreated, domain.WriteOutcome, error) {
	if err := domain.CheckMediaInput(&in); err != nil {
		return domain.CandidateMediaCreated{}, domain.WriteOutcome{}, err
	}
	if !domain.ValidID(domain.PrefixCandidate, in.CandidateID) {
		return domain.CandidateMediaCreated{}, domain.WriteOutcome{}, domain.Invalid("candidate_id", "required: the candidate the photo documents")
	}
	return idempotentWrite(ctx, s, p, w, func(tx *sql.Tx, now time.Time) (res domain.CandidateMediaCreated, rel domain.Related, err error) {
		if err := s.checkRef(ctx, tx, "inventory_candidates", "candidate_id", in.CandidateID, p.TenantID); err != nil {
			return res, rel, err
		}
		var saleID, kind, review string
		if err := tx.QueryRowContext(ctx, "SELECT sale_id, kind, review_status FROM inventory_candidates WHERE id = ?", in.CandidateID).
			Scan(&saleID, &kind, &review); err != nil {
			return res, rel, s.dbErr("candidate", err)
		}
		if !p.MaySeeSale(saleID) {
			return res, rel, fmt.Errorf("store: candidate %s: %w", in.CandidateID, domain.ErrSaleAssignment)
		}
		if review != domain.ReviewNeedsReview {
			return res, rel, fmt.Errorf("store: %w", domain.Because(domain.ErrTransitionInvalid, "candidate %s is %s: photos are attached only while it awaits review", in.CandidateID, review))
		}
		if kind == domain.CandidateStatusUpdate {
			return res, rel, domain.Invalid("candidate_id", "a status report takes no photos")
		}
		a, reused, created, err := s.ingAsset(ctx, tx, p, in, now)
		defer func() {
			if err != nil {
				s.removeCreated(created)
			}
		}()
		if err != nil {
			return res, rel, err
		}
		mediaID, already, err := s.attachMedia(ctx, tx, p, in.CandidateID, a, in.Caption, now)
		if err != nil {
			return res, rel, err
		}
		res = domain.CandidateMediaCreated{CandidateID: in.CandidateID, Kind: kind, MediaID: mediaID, AssetID: a.id, ContentHash: a.hash,
			MimeType: a.mime, Width: a.width, Height: a.height, ByteSize: a.size, ReviewStatus: review, AssetReused: reused,
			AlreadyAttached: already}
		return res, domain.Related{CandidateIDs: []string{in.CandidateID}}, nil
	})
}

// CreateMediaCandidate implements domain.IngestionBackend.
func (s *Store) CreateMediaCandidate(ctx context.Context, p domain.Principal, w domain.WriteMeta, in domain.NewCandidateMedia) (domain.CandidateMediaCreated, domain.WriteOutcome, error) {
	if err := domain.CheckMediaInput(&in); err != nil {
		return domain.CandidateMediaCreated{}, domain.WriteOutcome{}, err
	}
	if !domain.ValidID(domain.PrefixItem, in.ItemID) {
		return domain.CandidateMediaCreated{}, domain.WriteOutcome{}, domain.Invalid("item_id", "required: the item the photo is proposed for")
	}
	return idempotentWrite(ctx, s, p, w, func(tx *sql.Tx, now time.Time) (res domain.CandidateMediaCreated, rel domain.Related, err error) {
		it, err := s.ingItem(ctx, tx, p, in.ItemID)
		if err != nil {
			return res, rel, err
		}
		a, reused, created, err := s.ingAsset(ctx, tx, p, in, now)
		defer func() {
			if err != nil {
				s.removeCreated(created)
			}
		}()
		if err != nil {
			return res, rel, err
		}
		payload, err := ingPayloadBytes(struct {
			Kind        string `json:"kind"`
			ItemID      string `json:"item_id"`
			AssetID     string `json:"asset_id"`
			ContentHash string `json:"content_hash"`
			MimeType    string `json:"mime_type"`
			Width       int    `json:"width"`
			Height      int    `json:"height"`
			Caption     string `json:"caption,omitempty"`
		}{domain.CandidateAttachMedia, it.ID, a.id, a.hash, a.mime, a.width, a.height, in.Caption})
		if err != nil {
			return res, rel, s.dbErr("media candidate: encode", err)
		}
		c, err := s.ingSingleRecordCandidate(ctx, tx, p, it.SaleID, importKindMedia, payload, now)
		if err != nil {
			return res, rel, err
		}
		c.Kind = domain.CandidateAttachMedia
		c.Title = "Photo proposed for " + it.ID
		c.Notes = in.Caption
		if err := insertCandidate(ctx, tx, c); err != nil {
			return res, rel, s.dbErr("media candidate: candidate", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO candidate_item_changes (candidate_id, tenant_id, kind, item_id,
			observed_version, observed_status) VALUES (?, ?, ?, ?, ?, ?)`,
			c.ID, p.TenantID, domain.CandidateAttachMedia, it.ID, it.Version, it.Status); err != nil {
			return res, rel, s.dbErr("media candidate: change", err)
		}
		mediaID, _, err := s.attachMedia(ctx, tx, p, c.ID, a, in.Caption, now)
		if err != nil {
			return res, rel, err
		}
		res = domain.CandidateMediaCreated{CandidateID: c.ID, Kind: c.Kind, MediaID: mediaID, AssetID: a.id, ContentHash: a.hash,
			MimeType: a.mime, Width: a.width, Height: a.height, ByteSize: a.size, ReviewStatus: c.ReviewStatus, AssetReused: reused,
			ItemID: it.ID, ImportRunID: c.ImportRunID, SourceRecordID: c.SourceRecordID}
		return res, domain.Related{SourceImportRunIDs: []string{c.ImportRunID}, SourceImportRecordIDs: []string{c.SourceRecordID},
			CandidateIDs: []string{c.ID}, ItemIDs: []string{it.ID}}, nil
	})
}
