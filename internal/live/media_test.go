package live_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/contract"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/live/pgtest"
)

// The media writes in live mode keep the bytes in Postgres (supabase
// migration 12, docs/live-media.md). The contract suite runs their
// behaviour on both backends (internal/contract, Ingest/Media*); these
// cases are what only the database can show: the bytes as stored, the
// checks the SQL makes itself whatever the server sent, the tenant quota,
// row level security, immutability and concurrency.

const (
	toolAttach = "trove_attach_candidate_photo"
	toolMediaC = "trove_create_media_attachment_candidate"
)

// mediaPNG is a PNG of w×h pixels as the photo checks report it; seed
// makes its bytes distinct.
func mediaPNG(t testing.TB, w, h int, seed uint64) domain.PhotoUpload {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(seed, 7))
	for i := range img.Pix {
		img.Pix[i] = uint8(r.Uint32())
	}
	img.Set(0, 0, color.NRGBA{uint8(seed), uint8(seed >> 8), uint8(seed >> 16), 255})
	var b bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return domain.PhotoUpload{Bytes: b.Bytes(), MimeType: "image/png", Ext: "png", Width: w, Height: h, Size: b.Len(),
		ContentHash: domain.OriginalHash(b.Bytes())}
}

// superConn is a superuser connection to the shared cluster.
func superConn(t testing.TB, env *pgtest.Env) *pgx.Conn {
	t.Helper()
	conn, err := env.Cluster.Super(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(ctx) })
	return conn
}

// The bytes are stored in Postgres exactly as uploaded, once per tenant and
// hash, with the metadata the server reported; the caption as cleaned. The
// two tables are tenant-owned like every other (row level security enabled
// and forced, the tenant of the context, a signed-in seller's tenants), and
// their content is immutable for every role.
func TestMedia_BytesStoredInPostgresUnderRowLevelSecurity(t *testing.T) {
	env := seeded(t)
	b := newBackend(t, env)
	p := resolveAs(t, b, contract.CredOwner)
	up := mediaPNG(t, 16, 12, 1)
	res, _, err := b.AttachCandidateMedia(ctx, p, ingMeta(p, toolAttach, "mb-1", "event_mb1"),
		domain.NewCandidateMedia{CandidateID: "candidate_772", Upload: &up, Caption: "side\u200b view\n"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.AttachCandidateMedia(ctx, p, ingMeta(p, toolAttach, "mb-2", "event_mb2"),
		domain.NewCandidateMedia{CandidateID: "candidate_771", Upload: &up}); err != nil {
		t.Fatal(err)
	}
	conn := superConn(t, env)
	var (
		content                    []byte
		tenant, hash, mime, client string
		size, w, h                 int
	)
	if err := conn.QueryRow(ctx, `SELECT content, tenant_id, sha256, mime_type, byte_size, width, height, created_by_client_id
		FROM trovesnap.source_assets WHERE id = $1`, res.AssetID).Scan(&content, &tenant, &hash, &mime, &size, &w, &h, &client); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(content, up.Bytes) || tenant != fixtures.DemoTenantID || hash != up.ContentHash || mime != "image/png" ||
		size != up.Size || w != 16 || h != 12 || client != p.Client.ID {
		t.Fatalf("stored asset: %d bytes (equal %v), %s %s %s %d %dx%d %s", len(content), bytes.Equal(content, up.Bytes), tenant, hash, mime,
			size, w, h, client)
	}
	var assets int
	var captions []string
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM trovesnap.source_assets").Scan(&assets); err != nil || assets != 1 {
		t.Fatalf("%d assets for one upload made twice, %v", assets, err)
	}
	rows, _ := conn.Query(ctx, "SELECT caption FROM trovesnap.candidate_media WHERE asset_id = $1 ORDER BY candidate_id", res.AssetID)
	captions, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || !slices.Equal(captions, []string{"", "side view"}) {
		t.Fatalf("captions = %q, %v", captions, err)
	}

	for _, table := range []string{"source_assets", "candidate_media"} {
		var enabled, forced bool
		var policies []string
		err := conn.QueryRow(ctx, `SELECT c.relrowsecurity, c.relforcerowsecurity,
			coalesce((SELECT array_agg(p.polname::text ORDER BY p.polname) FROM pg_policy p WHERE p.polrelid = c.oid), '{}')
			FROM pg_class c WHERE c.oid = ('trovesnap.' || $1)::regclass`, table).Scan(&enabled, &forced, &policies)
		if err != nil || !enabled || !forced || !slices.Equal(policies, []string{"seller_member_read", "tenant_context"}) {
			t.Errorf("%s: rls %v forced %v policies %v, %v", table, enabled, forced, policies, err)
		}
	}
	// The owner role (every RPC runs as it) sees a tenant's assets only in
	// that tenant's context.
	var mine, theirs int
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL ROLE trovesnap_owner"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT set_config('trovesnap.tenant_id', $1, true)", fixtures.OtherTenantID); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, "SELECT (SELECT count(*) FROM trovesnap.source_assets) + (SELECT count(*) FROM trovesnap.candidate_media)").Scan(&theirs); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT set_config('trovesnap.tenant_id', $1, true)", fixtures.DemoTenantID); err != nil {
			return err
		}
		return tx.QueryRow(ctx, "SELECT (SELECT count(*) FROM trovesnap.source_assets) + (SELECT count(*) FROM trovesnap.candidate_media)").Scan(&mine)
	})
	if err != nil || mine != 3 || theirs != 0 {
		t.Fatalf("media rows seen by their tenant %d, by another %d, %v", mine, theirs, err)
	}

	// Immutable, and no row whose bytes are not the ones its metadata names.
	for _, stmt := range []string{
		"UPDATE trovesnap.source_assets SET content = '\\x00'::bytea",
		"UPDATE trovesnap.source_assets SET width = width + 1",
		"UPDATE trovesnap.candidate_media SET caption = 'edited'",
	} {
		if _, err := conn.Exec(ctx, stmt); err == nil || !strings.Contains(err.Error(), "trovesnap:immutable:") {
			t.Errorf("%s: %v, want it refused as immutable", stmt, err)
		}
	}
	_, err = conn.Exec(ctx, `INSERT INTO trovesnap.source_assets (id, tenant_id, sha256, mime_type, byte_size, width, height, content,
		created_by_client_id, created_at) VALUES ('asset_forged', $1, $2, 'image/png', 4, 1, 1, '\x00010203'::bytea, $3, now())`,
		fixtures.DemoTenantID, up.ContentHash[:len(up.ContentHash)-1]+"0", p.Client.ID)
	if err == nil || !strings.Contains(err.Error(), "trovesnap:invalid_input:image_base64") {
		t.Fatalf("bytes not as hashed: %v, want them refused by the table itself", err)
	}
}

// The RPC checks the bytes itself, whatever the server in front of it
// sent: bytes that are not valid base64, not the size or not the sha256
// given, two sources or none, an unclean caption — each refused with
// invalid_input and nothing written.
func TestMedia_DatabaseVerifiesTheBytes(t *testing.T) {
	env := seeded(t)
	up := mediaPNG(t, 8, 8, 2)
	b64 := base64.StdEncoding.EncodeToString(up.Bytes)
	before := ingCounts(t, env)
	args := func(key string, media map[string]any, content any) map[string]any {
		m := map[string]any{"candidate_id": "candidate_772", "mime_type": up.MimeType, "width": up.Width, "height": up.Height,
			"byte_size": up.Size, "content_hash": up.ContentHash}
		for k, v := range media {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return map[string]any{"p_tool": toolAttach, "p_tool_major": 1,
			"p_key": key, "p_fingerprint": "sha256:" + key, "p_event": map[string]any{"id": "event_" + key}, "p_started_at": nil,
			"p_media": m, "p_content": content}
	}
	other := mediaPNG(t, 8, 8, 3)
	for name, c := range map[string]struct {
		args  map[string]any
		field string
	}{
		"not base64":          {args("vb-1", nil, "!!not base64!!"), "image_base64"},
		"other bytes":         {args("vb-2", map[string]any{"byte_size": other.Size}, base64.StdEncoding.EncodeToString(other.Bytes)), "image_base64"},
		"truncated":           {args("vb-3", nil, base64.StdEncoding.EncodeToString(up.Bytes[:len(up.Bytes)-3])), "image_base64"},
		"size as claimed":     {args("vb-4", map[string]any{"byte_size": up.Size + 1}, b64), "image_base64"},
		"both sources":        {args("vb-5", map[string]any{"asset_id": "asset_1"}, b64), "image_base64"},
		"no source":           {args("vb-6", nil, nil), "image_base64"},
		"unknown type":        {args("vb-7", map[string]any{"mime_type": "image/svg+xml"}, b64), "image_base64"},
		"too many pixels":     {args("vb-8", map[string]any{"width": 10000, "height": 4001}, b64), "image_base64"},
		"fractional width":    {args("vb-9", map[string]any{"width": 8.5}, b64), "image_base64"},
		"control in caption":  {args("vb-10", map[string]any{"caption": "a\u0007b"}, b64), "caption"},
		"line sep in caption": {args("vb-11", map[string]any{"caption": "a\u2028b"}, b64), "caption"},
		"long caption":        {args("vb-12", map[string]any{"caption": strings.Repeat("c", 201)}, b64), "caption"},
		"not an asset id":     {args("vb-13", map[string]any{"asset_id": "item_1172"}, nil), "asset_id"},
		"no candidate":        {args("vb-14", map[string]any{"candidate_id": nil}, b64), "candidate_id"},
	} {
		status, body := rpcClient(t, env, contract.CredOwner, "mcp_attach_candidate_media", c.args)
		if status != http.StatusBadRequest || body["code"] != "P0001" || body["message"] != "trovesnap:invalid_input:"+c.field {
			t.Errorf("%s: %d %v, want invalid_input:%s", name, status, body, c.field)
		}
	}
	// The same checks guard the media candidate.
	a := args("vb-20", nil, base64.StdEncoding.EncodeToString(other.Bytes))
	a["p_media"].(map[string]any)["item_id"] = "item_1172"
	delete(a["p_media"].(map[string]any), "candidate_id")
	if status, body := rpcClient(t, env, contract.CredOwner, "mcp_create_media_candidate", a); status != http.StatusBadRequest ||
		body["message"] != "trovesnap:invalid_input:image_base64" {
		t.Errorf("media candidate with other bytes: %d %v", status, body)
	}
	if d := ingDelta(before, ingCounts(t, env)); len(d) != 0 {
		t.Fatalf("refused media writes wrote %v", d)
	}
	// And the well-formed call is accepted.
	if status, body := rpcClient(t, env, contract.CredOwner, "mcp_attach_candidate_media", args("vb-ok", nil, b64)); status != http.StatusOK || body["replayed"] != false {
		t.Fatalf("well-formed call: %d %v", status, body)
	}
}

// The tenant quota (domain.MaxTenantMediaBytes) is checked in SQL, under
// the tenant's asset lock, before anything is written: with the tenant's
// stored bytes at quota − n, an upload of n bytes is stored, the next new
// upload is refused with nothing written, the same bytes again still
// deduplicate, and another tenant is not affected. (2 GiB of assets are
// seeded as metadata only: the superuser's replica mode skips the guard
// that checks a row's bytes against its size, and the quota counts sizes.)
func TestMedia_TenantQuotaRefusedBeforeAnythingIsWritten(t *testing.T) {
	env := seeded(t)
	b := newBackend(t, env)
	p := resolveAs(t, b, contract.CredOwner)
	up := mediaPNG(t, 16, 16, 4)
	const full = int64(domain.MaxTenantMediaBytes)
	conn := superConn(t, env)
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
			return err
		}
		// 255 rows of 8 MiB and one of 8 MiB − len(up): quota − len(up) in all.
		_, err := tx.Exec(ctx, `INSERT INTO trovesnap.source_assets (id, tenant_id, sha256, mime_type, byte_size, width, height, content,
				created_by_client_id, created_at)
			SELECT 'asset_seed' || n, $1, 'sha256:' || lpad(to_hex(n), 64, '0'), 'image/jpeg',
				CASE WHEN n = 256 THEN $2::integer - $3::integer ELSE $2::integer END, 1, 1, '\x00'::bytea, $4, now()
			FROM generate_series(1, 256) n`, fixtures.DemoTenantID, domain.MaxPhotoBytes, up.Size, p.Client.ID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var used int64
	if err := conn.QueryRow(ctx, "SELECT sum(byte_size) FROM trovesnap.source_assets WHERE tenant_id = $1", fixtures.DemoTenantID).Scan(&used); err != nil || used != full-int64(up.Size) {
		t.Fatalf("seeded %d bytes, %v; want quota − %d", used, err, up.Size)
	}

	// Exactly at the quota: stored.
	res, _, err := b.AttachCandidateMedia(ctx, p, ingMeta(p, toolAttach, "mq-1", "event_mq1"),
		domain.NewCandidateMedia{CandidateID: "candidate_772", Upload: &up})
	if err != nil || res.AssetReused {
		t.Fatalf("an upload filling the quota exactly: %+v, %v", res, err)
	}
	// Over it: refused, nothing written, by either write.
	before := ingCounts(t, env)
	up2 := mediaPNG(t, 2, 2, 5)
	_, _, err = b.AttachCandidateMedia(ctx, p, ingMeta(p, toolAttach, "mq-2", "event_mq2"),
		domain.NewCandidateMedia{CandidateID: "candidate_771", Upload: &up2})
	var ie *domain.InputError
	if !errors.As(err, &ie) || ie.Field != "image_base64" || !strings.Contains(ie.Reason, fmt.Sprintf("media quota of %d bytes is full", full)) {
		t.Fatalf("over the quota: %v", err)
	}
	_, _, err = b.CreateMediaCandidate(ctx, p, ingMeta(p, toolMediaC, "mq-3", "event_mq3"),
		domain.NewCandidateMedia{ItemID: "item_1172", Upload: &up2})
	if !errors.As(err, &ie) || ie.Field != "image_base64" {
		t.Fatalf("media candidate over the quota: %v", err)
	}
	if d := ingDelta(before, ingCounts(t, env)); len(d) != 0 {
		t.Fatalf("refusals over the quota wrote %v", d)
	}
	// Bytes the tenant stored already take no quota; an asset by id neither.
	again, _, err := b.AttachCandidateMedia(ctx, p, ingMeta(p, toolAttach, "mq-4", "event_mq4"),
		domain.NewCandidateMedia{CandidateID: "candidate_771", Upload: &up})
	if err != nil || !again.AssetReused || again.AssetID != res.AssetID {
		t.Fatalf("the same bytes on a full quota: %+v, %v", again, err)
	}
	if _, _, err := b.CreateMediaCandidate(ctx, p, ingMeta(p, toolMediaC, "mq-5", "event_mq5"),
		domain.NewCandidateMedia{ItemID: "item_1172", AssetID: res.AssetID}); err != nil {
		t.Fatalf("an asset by id on a full quota: %v", err)
	}
	// The quota is the tenant's own.
	o := resolveAs(t, b, contract.CredOther)
	if _, _, err := b.CreateMediaCandidate(ctx, o, ingMeta(o, toolMediaC, "mq-6", "event_mq6"),
		domain.NewCandidateMedia{ItemID: "item_1290", Upload: &up2}); err != nil {
		t.Fatalf("another tenant's upload: %v", err)
	}
}

// Concurrent writes of one tenant serialise where they must: the same new
// bytes uploaded at once are stored once (every call succeeds, one asset),
// and attachments to one candidate at once get distinct positions, never
// more than the limit.
func TestMedia_ConcurrentUploadsOfOneTenant(t *testing.T) {
	env := seeded(t)
	b := newBackend(t, env)
	p := resolveAs(t, b, contract.CredOwner)
	same := mediaPNG(t, 32, 32, 6)
	cands := []string{"candidate_771", "candidate_772", "candidate_775", "candidate_778", "candidate_779", "candidate_781"}
	var wg sync.WaitGroup
	errs := make([]error, len(cands))
	assets := make([]string, len(cands))
	for i, c := range cands {
		wg.Go(func() {
			r, _, err := b.AttachCandidateMedia(ctx, p, ingMeta(p, toolAttach, fmt.Sprintf("mc-s%d", i), fmt.Sprintf("event_mcs%d", i)),
				domain.NewCandidateMedia{CandidateID: c, Upload: &same})
			errs[i], assets[i] = err, r.AssetID
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil || assets[i] != assets[0] {
			t.Fatalf("upload %d of the same bytes: %s, %v (first: %s)", i, assets[i], err, assets[0])
		}
	}
	// 14 distinct photos at once for one candidate: 12 attached, 2 refused.
	errs = make([]error, domain.MaxPhotosPerCandidate+2)
	for i := range errs {
		wg.Go(func() {
			u := mediaPNG(t, 4, 4, uint64(100+i))
			_, _, errs[i] = b.AttachCandidateMedia(ctx, p, ingMeta(p, toolAttach, fmt.Sprintf("mc-c%d", i), fmt.Sprintf("event_mcc%d", i)),
				domain.NewCandidateMedia{CandidateID: "candidate_781", Upload: &u})
		})
	}
	wg.Wait()
	refused := 0
	for _, err := range errs {
		var ie *domain.InputError
		switch {
		case err == nil:
		case errors.As(err, &ie) && ie.Field == "candidate_id":
			refused++
		default:
			t.Fatalf("concurrent attachment: %v", err)
		}
	}
	conn := superConn(t, env)
	rows, _ := conn.Query(ctx, "SELECT position FROM trovesnap.candidate_media WHERE candidate_id = 'candidate_781' ORDER BY position")
	positions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil || refused != 3 || !slices.Equal(positions, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}) {
		// The shared upload took position 1, so 11 of the 14 fit.
		t.Fatalf("positions %v, %d refused, %v; want 1..12 and 3 refused", positions, refused, err)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM trovesnap.source_assets").Scan(&n); err != nil || n != 12 {
		t.Fatalf("%d assets, %v; want 12 (one shared, 11 attached; a refused upload stores nothing)", n, err)
	}
}

// Only the API roles of MCP calls may call the media RPCs — anon (a client
// token) and authenticated (a connector's access token; migration 49): their
// authority is the credential they carry; their bodies and helpers are
// nobody's.
func TestMedia_OnlyTheServerRoleMayExecute(t *testing.T) {
	env := pgtest.Need(t)
	conn := superConn(t, env)
	sig := "(text, integer, text, text, jsonb, timestamptz, jsonb, text)"
	body := "(text, text, integer, text, text, jsonb, timestamptz, jsonb, text)"
	for fn, anon := range map[string]bool{"public.mcp_attach_candidate_media" + sig: true, "public.mcp_create_media_candidate" + sig: true,
		"trovesnap.mcp_attach_candidate_media" + body: false, "trovesnap.mcp_create_media_candidate" + body: false} {
		for role, want := range map[string]bool{"trovesnap_mcp": false, "anon": anon, "authenticated": anon, "service_role": false} {
			var ok bool
			if err := conn.QueryRow(ctx, "SELECT has_function_privilege($1, $2, 'EXECUTE')", role, fn).Scan(&ok); err != nil || ok != want {
				t.Errorf("%s may execute %s: %v, want %v (%v)", role, fn, ok, want, err)
			}
		}
	}
	rows, _ := conn.Query(ctx, `SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'trovesnap' AND p.proname IN ('source_asset_guard', 'asset_owner', 'media_input', 'media_asset',
			'media_attach', 'media_payload', 'media_result')`)
	helpers, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(helpers) != 7 {
		t.Fatalf("helpers = %v, %v", helpers, err)
	}
	for _, fn := range helpers {
		for _, role := range []string{"trovesnap_mcp", "anon", "authenticated", "service_role"} {
			var ok bool
			if err := conn.QueryRow(ctx, "SELECT has_function_privilege($1, $2, 'EXECUTE')", role, fn).Scan(&ok); err != nil || ok {
				t.Errorf("%s may execute %s (%v)", role, fn, err)
			}
		}
	}
}

// The two media tools through a real MCP client in live mode: offered, an
// image attached as base64 and proposed for an item, a file path refused
// with its reason before anything is written.
func TestMedia_ToolsLive(t *testing.T) {
	env := seeded(t)
	lg := newLiveGate(t, env)
	cs := connect(t, lg.g, contract.CredOwner)
	tools, err := cs.ListTools(ctx, &mcp.ListToolsParams{})
	if err != nil {
		t.Fatal(err)
	}
	var offered []string
	for _, tl := range tools.Tools {
		offered = append(offered, tl.Name)
	}
	for _, name := range []string{toolAttach, toolMediaC} {
		if !slices.Contains(offered, name) {
			t.Fatalf("live mode does not offer %s", name)
		}
	}
	up := mediaPNG(t, 64, 64, 7) // 16 KiB: larger than any event or stored result
	before := ingCounts(t, env)
	refused := call(t, cs, toolAttach, map[string]any{"candidate_id": "candidate_772", "image_base64": "/home/me/photos/lamp.jpg",
		"idempotency_key": "live-photo-0000"})
	if refused["status"] != "failed" || !strings.Contains(mustJSON(refused["errors"]), "local file path") {
		t.Fatalf("a path = %v", refused)
	}
	if d := ingDelta(before, ingCounts(t, env)); len(d) != 0 {
		t.Fatalf("a refused photo wrote %v", d)
	}
	ok := func(tool string, e map[string]any) map[string]any {
		t.Helper()
		if e["mode"] != "live" || (e["status"] != "succeeded" && e["status"] != "succeeded_with_warnings") {
			t.Fatalf("%s = %v", tool, e)
		}
		return e["data"].(map[string]any)
	}
	b64 := "data:image/png;base64," + base64.StdEncoding.EncodeToString(up.Bytes)
	att := ok(toolAttach, call(t, cs, toolAttach, map[string]any{"candidate_id": "candidate_772", "image_base64": b64,
		"caption": "lamp base", "idempotency_key": "live-photo-0001"}))
	if !strings.HasPrefix(fmt.Sprint(att["asset_id"]), "asset_") || att["content_hash"] != up.ContentHash {
		t.Fatalf("attach = %v", att)
	}
	prop := ok(toolMediaC, call(t, cs, toolMediaC, map[string]any{"item_id": "item_1172", "image_base64": b64,
		"idempotency_key": "live-photo-0002"}))
	if prop["asset_id"] != att["asset_id"] || prop["asset_reused"] != true || prop["kind"] != domain.CandidateAttachMedia {
		t.Fatalf("media candidate = %v", prop)
	}
	d := ingDelta(before, ingCounts(t, env))
	for table, n := range map[string]int64{"source_assets": 1, "candidate_media": 2, "import_runs": 1, "source_records": 1,
		"inventory_candidates": 1, "candidate_item_changes": 1, "idempotency_keys": 2} {
		if d[table] != n {
			t.Errorf("%s grew by %d, want %d (all: %v)", table, d[table], n, d)
		}
		delete(d, table)
	}
	if len(d) != 0 {
		t.Errorf("other tables changed: %v", d)
	}
	// The bytes are stored once, in the asset: neither the events nor the
	// idempotency rows carry them.
	conn := superConn(t, env)
	var events, keys int
	if err := conn.QueryRow(ctx, `SELECT (SELECT coalesce(max(octet_length(body::text)), 0) FROM trovesnap.plugin_events),
		(SELECT coalesce(max(octet_length(result::text)), 0) FROM trovesnap.idempotency_keys)`).Scan(&events, &keys); err != nil {
		t.Fatal(err)
	}
	if events >= up.Size || keys >= up.Size {
		t.Fatalf("largest event %d bytes, largest idempotency row %d: the image is %d bytes", events, keys, up.Size)
	}
}

// BenchmarkLive_AttachMedia1MB measures one attachment of a new 1 MiB
// image on the local cluster: base64 in the JSON body, decoded and hashed
// in SQL, stored in the same transaction as the attachment, the event and
// the idempotency row. (A fresh candidate every 12 photos, made outside
// the timer.)
func BenchmarkLive_AttachMedia1MB(b *testing.B) {
	env := seeded(b)
	be := newBackend(b, env)
	p, err := be.ResolvePrincipal(ctx, contract.CredOwner)
	if err != nil {
		b.Fatal(err)
	}
	var cand string
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		up := mediaPNG(b, 512, 512, uint64(1000+i)) // 512×512 RGBA, stored: 1 MiB and a few bytes
		if i%domain.MaxPhotosPerCandidate == 0 {
			c, _, err := be.CreateCandidate(ctx, p, benchMeta(p, "trove_create_candidate", fmt.Sprintf("bm%dc", i)),
				domain.NewCandidate{SaleID: fixtures.PublishedSaleID, Title: "Bench photo subject"})
			if err != nil {
				b.Fatal(err)
			}
			cand = c.CandidateID
		}
		b.SetBytes(int64(up.Size))
		b.StartTimer()
		if _, _, err := be.AttachCandidateMedia(ctx, p, benchMeta(p, toolAttach, fmt.Sprintf("bm%d", i)),
			domain.NewCandidateMedia{CandidateID: cand, Upload: &up}); err != nil {
			b.Fatal(err)
		}
	}
}
