package cli_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/cli"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/store"
)

// `trovesnap media add` in mock mode, as the demo client: every photo is
// a trove_attach_candidate_photo call through the gate, on the real store.

// gpsMarker is the latitude the test photos carry: it must never be stored.
var gpsMarker = []byte{0x2D, 0x1A, 0x2B, 0x3C, 0x0E, 0x5F, 0x60, 0x71}

// photoWithGPS is a w×h JPEG (encoded by image/jpeg, its pixels made from
// seed) with an Exif APP1 whose GPS IFD holds gpsMarker.
func photoWithGPS(t *testing.T, w, h int, seed byte) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x*5) + seed, uint8(y * 3), seed, 255})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	var tiff bytes.Buffer
	le := binary.LittleEndian
	put := func(vs ...any) {
		for _, v := range vs {
			if err := binary.Write(&tiff, le, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	tiff.WriteString("II*\x00")
	put(uint32(8))
	put(uint16(2)) // IFD0: orientation, GPS pointer
	put(uint16(0x0112), uint16(3), uint32(1), uint16(1), uint16(0))
	put(uint16(0x8825), uint16(4), uint32(1), uint32(8+2+24+4))
	put(uint32(0))
	put(uint16(1)) // GPS IFD: the latitude, out of line
	put(uint16(0x0002), uint16(5), uint32(1), uint32(38+2+12+4))
	put(uint32(0))
	tiff.Write(gpsMarker)
	payload := append([]byte("Exif\x00\x00"), tiff.Bytes()...)
	seg := append([]byte{0xFF, 0xE1, byte((len(payload) + 2) >> 8), byte(len(payload) + 2)}, payload...)
	jpg := b.Bytes()
	out := append(append(append([]byte{}, jpg[:2]...), seg...), jpg[2:]...)
	if !bytes.Contains(out, gpsMarker) {
		t.Fatal("the test photo carries no GPS")
	}
	return out
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func openMock(t *testing.T, db string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), db, store.Options{Mode: domain.ModeMock, Clock: domain.NewFixedClock(fixtures.Epoch), IDs: domain.RandomIDs{},
		SeedFunc: fixtures.Dataset})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func counts(t *testing.T, db string) map[string]int64 {
	t.Helper()
	c, err := openMock(t, db).Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// events lists the plugin_events of a tool.
func events(t *testing.T, db, tool string) []domain.Event {
	t.Helper()
	ev, err := openMock(t, db).Events(context.Background(), store.EventFilter{Tool: tool})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// dataDigest is the store's digest without the tables every call writes,
// refused or not (its event, the rate counters, the client's last call).
func dataDigest(t *testing.T, db string) map[string]string {
	t.Helper()
	openMock(t, db) // seeds a new database as the commands do
	d := mockDigest(t, db)
	maps.DeleteFunc(d, func(k, _ string) bool {
		return strings.Contains(k, "event") || strings.Contains(k, "rate") || strings.Contains(k, "idempotency") || k == "client_activity"
	})
	return d
}

func mediaAdd(t *testing.T, env map[string]string, argv ...string) (cli.MediaAddResult, result) {
	t.Helper()
	r := run(t, env, append([]string{"media", "add", "--json"}, argv...)...)
	var res cli.MediaAddResult
	if err := json.Unmarshal([]byte(r.out), &res); err != nil {
		t.Fatalf("media add --json: %v: %+v", err, r)
	}
	return res, r
}

func TestMediaAdd_ToACandidateStoresStrippedPrivateMediaAndARerunReplays(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "m.db")
	photos := []string{writeFile(t, dir, "front.jpg", photoWithGPS(t, 64, 48, 1)), writeFile(t, dir, "back.jpg", photoWithGPS(t, 40, 30, 2))}
	before := counts(t, db)
	res, r := mediaAdd(t, env, append([]string{"--db", db, "--candidate", fixtures.DemoCandidateID}, photos...)...)
	if r.code != cli.ExitOK || res.Added != 2 || res.Failed != 0 || res.Mode != domain.ModeMock || len(res.Photos) != 2 {
		t.Fatalf("media add: %+v", r)
	}
	if strings.Contains(r.err, "\x1b[") {
		t.Errorf("a progress bar was drawn on a stderr that is no terminal: %q", r.err)
	}
	after := counts(t, db)
	if after["source_assets"] != before["source_assets"]+2 || after["candidate_media"] != before["candidate_media"]+2 {
		t.Fatalf("assets %d→%d, media %d→%d", before["source_assets"], after["source_assets"], before["candidate_media"], after["candidate_media"])
	}
	for i, ph := range res.Photos {
		orig, _ := os.ReadFile(photos[i])
		sum := sha256.Sum256(orig)
		if ph.Path != photos[i] || ph.Status != "added" || ph.CandidateID != fixtures.DemoCandidateID || !domain.ValidID("asset", ph.AssetID) ||
			ph.MimeType != "image/jpeg" || ph.ContentHash == "sha256:"+hex.EncodeToString(sum[:]) {
			t.Errorf("photo %d: %+v", i, ph)
		}
		// The stored bytes: the hash the result names, no GPS left.
		stored, err := os.ReadFile(filepath.Join(dir, "assets", fixtures.DemoTenantID, ph.ContentHash[7:9], ph.ContentHash[7:]+".jpg"))
		if err != nil {
			t.Fatal(err)
		}
		if got := sha256.Sum256(stored); "sha256:"+hex.EncodeToString(got[:]) != ph.ContentHash || ph.ByteSize != len(stored) ||
			bytes.Contains(stored, gpsMarker) || len(stored) != len(orig) || !bytes.Contains(stored, []byte("Exif\x00\x00II*\x00")) {
			// The GPS IFD is zeroed in place: the Exif segment (its
			// orientation) stays, the length with it.
			t.Errorf("photo %d: the stored file is not the stripped photo the result describes", i)
		}
		if _, _, err := image.Decode(bytes.NewReader(stored)); err != nil {
			t.Errorf("photo %d: the stored file does not decode: %v", i, err)
		}
	}
	// One event per photo, a success of the demo client over the CLI.
	evs := events(t, db, "trove_attach_candidate_photo")
	if len(evs) != 2 || evs[0].Outcome != "success" || evs[0].Client.ID != fixtures.DemoClientID {
		t.Fatalf("events: %+v", evs)
	}

	// The same command again: the original results, nothing new stored.
	again, r := mediaAdd(t, env, append([]string{"--db", db, "--candidate", fixtures.DemoCandidateID}, photos...)...)
	if r.code != cli.ExitOK || again.Added != 2 {
		t.Fatalf("rerun: %+v", r)
	}
	for i, ph := range again.Photos {
		if ph.Status != "replayed" || ph.AssetID != res.Photos[i].AssetID || ph.MediaID != res.Photos[i].MediaID {
			t.Errorf("rerun photo %d: %+v, want a replay of %+v", i, ph, res.Photos[i])
		}
	}
	if c := counts(t, db); c["source_assets"] != after["source_assets"] || c["candidate_media"] != after["candidate_media"] {
		t.Fatal("a rerun stored something again")
	}

	// The table names the asset ids.
	r = run(t, env, append([]string{"--db", db, "media", "add", "--candidate", fixtures.DemoCandidateID}, photos...)...)
	if r.code != cli.ExitOK || !strings.Contains(r.out, res.Photos[0].AssetID) || !strings.Contains(r.out, "replayed") {
		t.Fatalf("table: %+v", r)
	}
}

func TestMediaAdd_NewCandidatesOnePerPhotoAndAFailedPhotoLeavesNothing(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "m.db")
	oak := writeFile(t, dir, "oak_chair-2.jpg", photoWithGPS(t, 32, 32, 3))
	lamp := writeFile(t, dir, "brass lamp.jpg", photoWithGPS(t, 32, 24, 4))
	notes := writeFile(t, dir, "notes.jpg", []byte("not a photo at all, just text"))
	heic := writeFile(t, dir, "IMG_0001.HEIC", append([]byte{0, 0, 0, 0x18}, []byte("ftypheic\x00\x00\x00\x00mif1heic")...))
	missing := filepath.Join(dir, "gone.jpg")
	before := counts(t, db)
	res, r := mediaAdd(t, env, "--db", db, "--sale", fixtures.PublishedSaleID, "--new-candidates", oak, notes, lamp, heic, missing)
	if r.code != cli.ExitError || res.Added != 2 || res.Failed != 3 || !strings.Contains(r.err, "3 of 5 photos failed") {
		t.Fatalf("media add: %+v", r)
	}
	want := []struct{ status, code, says string }{
		{"added", "", ""}, {"failed", "invalid_input", "text"}, {"added", "", ""}, {"failed", "invalid_input", "HEIC"}, {"failed", "file_not_found", "No such file"},
	}
	for i, w := range want {
		ph := res.Photos[i]
		code, msg := "", ""
		if ph.Error != nil {
			code, msg = string(ph.Error.Code), ph.Error.Message
		}
		if ph.Status != w.status || code != w.code || !strings.Contains(msg, w.says) {
			t.Errorf("photo %d: %+v, want %s %s %q", i, ph, w.status, w.code, w.says)
		}
	}
	after := counts(t, db)
	if after["inventory_candidates"] != before["inventory_candidates"]+2 || after["source_assets"] != before["source_assets"]+2 {
		t.Fatalf("candidates %d→%d, assets %d→%d: a failed photo left a candidate or an asset", before["inventory_candidates"], after["inventory_candidates"],
			before["source_assets"], after["source_assets"])
	}
	// Each new candidate is in the sale, titled from its file, in review,
	// with its photo.
	st := openMock(t, db)
	p, err := st.ResolvePrincipal(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for i, title := range map[int]string{0: "oak chair 2", 2: "brass lamp"} {
		ph := res.Photos[i]
		c, err := st.GetCandidate(context.Background(), p, ph.CandidateID)
		if err != nil || !ph.CandidateCreated || c.Title != title || c.SaleID != fixtures.PublishedSaleID || c.ReviewStatus != domain.ReviewNeedsReview {
			t.Errorf("photo %d: candidate %+v, %v", i, c, err)
		}
	}
	if n := len(events(t, db, "trove_create_candidate")); n != 2 {
		t.Errorf("%d trove_create_candidate events, want 2", n)
	}

	// Again: the same candidates and assets, nothing new.
	again, r := mediaAdd(t, env, "--db", db, "--sale", fixtures.PublishedSaleID, "--new-candidates", oak, lamp)
	if r.code != cli.ExitOK || again.Photos[0].CandidateID != res.Photos[0].CandidateID || again.Photos[0].CandidateCreated ||
		again.Photos[1].AssetID != res.Photos[2].AssetID || again.Photos[1].Status != "replayed" {
		t.Fatalf("rerun: %+v", r)
	}
	if c := counts(t, db); c["inventory_candidates"] != after["inventory_candidates"] || c["source_assets"] != after["source_assets"] ||
		c["candidate_media"] != after["candidate_media"] {
		t.Fatal("a rerun created candidates or media")
	}
}

func TestMediaAdd_RefusalsWriteNothing(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "m.db")
	photo := writeFile(t, dir, "chair.jpg", photoWithGPS(t, 16, 16, 5))
	text := writeFile(t, dir, "list.txt", []byte("chair, lamp, rug"))
	before := dataDigest(t, db)
	for _, c := range []struct {
		what string
		argv []string
		code string
		says string
	}{
		{"another tenant's sale", []string{"--sale", fixtures.OtherPublishedSaleID, "--new-candidates", photo, text, photo}, "invalid_reference", "not visible"},
		{"an unknown candidate", []string{"--candidate", "candidate_999", photo}, "invalid_reference", "not visible"},
		{"a text file", []string{"--candidate", fixtures.DemoCandidateID, text}, "invalid_input", "not an accepted image"},
	} {
		res, r := mediaAdd(t, env, append([]string{"--db", db}, c.argv...)...)
		if r.code != cli.ExitError || res.Added != 0 || res.Photos[0].Error == nil || string(res.Photos[0].Error.Code) != c.code ||
			!strings.Contains(res.Photos[0].Error.Message, c.says) {
			t.Errorf("%s: %+v", c.what, r)
		}
		if len(res.Photos) > 1 && res.Photos[1].Status != "skipped" {
			t.Errorf("%s: the batch went on after a refusal every photo meets: %+v", c.what, res.Photos[1])
		}
	}
	for _, c := range []struct {
		what string
		argv []string
		says string
	}{
		{"no target", []string{photo}, "--candidate"},
		{"--sale alone", []string{"--sale", fixtures.PublishedSaleID, photo}, "--new-candidates"},
		{"both targets", []string{"--candidate", fixtures.DemoCandidateID, "--sale", fixtures.PublishedSaleID, "--new-candidates", photo}, "not both"},
		{"no photo", []string{"--candidate", fixtures.DemoCandidateID}, "arg"},
		{"a sale that is no id", []string{"--sale", "my sale", "--new-candidates", photo}, "not a sale id"},
	} {
		if r := run(t, env, append([]string{"--db", db, "media", "add"}, c.argv...)...); r.code != cli.ExitUsage || !strings.Contains(r.err, c.says) {
			t.Errorf("%s: %+v", c.what, r)
		}
	}
	// A malformed client token is refused before anything opens.
	bad := maps.Clone(env)
	bad["TROVESNAP_CLIENT_TOKEN"] = "not-a-token"
	if r := run(t, bad, "--db", db, "media", "add", "--candidate", fixtures.DemoCandidateID, photo); r.code != cli.ExitConfig {
		t.Errorf("malformed token: %+v", r)
	}
	if after := dataDigest(t, db); !maps.Equal(before, after) {
		for k := range after {
			if before[k] != after[k] {
				t.Errorf("table %s changed", k)
			}
		}
	}
	// Each refusal is audited.
	if evs := events(t, db, "trove_attach_candidate_photo"); len(evs) < 2 || !slices.ContainsFunc(evs, func(e domain.Event) bool { return e.ErrorCode == "invalid_reference" }) {
		t.Errorf("refusal events: %+v", evs)
	}
}

func TestMediaAdd_ActsAsTheRegisteredClientOfItsToken(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "m.db")
	setPassphrase(t, env, db)
	r := runP(t, env, "--db", db, "client", "register", "--name", "Photo desk", "--type", "custom", "--tenant", fixtures.DemoTenantID,
		"--actor", fixtures.CatalogerUserID, "--groups", "tenant_read,candidate_write", "--json")
	var reg struct {
		ClientID string `json:"client_id"`
		Token    string `json:"token"`
	}
	if r.code != cli.ExitOK || json.Unmarshal([]byte(r.out), &reg) != nil || reg.Token == "" {
		t.Fatalf("register: %+v", r)
	}
	env["TROVESNAP_CLIENT_TOKEN"] = reg.Token
	res, r := mediaAdd(t, env, "--db", db, "--candidate", fixtures.DemoCandidateID, writeFile(t, dir, "a.jpg", photoWithGPS(t, 20, 20, 6)))
	if r.code != cli.ExitOK || res.Added != 1 {
		t.Fatalf("media add: %+v", r)
	}
	evs := events(t, db, "trove_attach_candidate_photo")
	if len(evs) != 1 || evs[0].Client.ID != reg.ClientID || evs[0].Actor.ID != fixtures.CatalogerUserID || strings.Contains(r.out+r.err, reg.Token) {
		t.Fatalf("events: %+v", evs)
	}
}

// Two files of the same bytes in one batch, added side by side: one is
// added, the other replays it (after waiting for it if they overlapped).
func TestMediaAdd_SameBytesTwiceInABatchAddOnce(t *testing.T) {
	env, dir := tempEnv(t)
	db := filepath.Join(dir, "m.db")
	first := writeFile(t, dir, "a.jpg", photoWithGPS(t, 24, 24, 7))
	same := photoWithGPS(t, 24, 24, 8)
	b1, b2 := writeFile(t, dir, "b.jpg", same), writeFile(t, dir, "b copy.jpg", same)
	before := counts(t, db)
	res, r := mediaAdd(t, env, "--db", db, "--candidate", fixtures.DemoCandidateID, first, b1, b2)
	if r.code != cli.ExitOK || res.Added != 3 || res.Photos[1].AssetID != res.Photos[2].AssetID ||
		!slices.Equal([]string{res.Photos[1].Status, res.Photos[2].Status}, []string{"added", "replayed"}) &&
			!slices.Equal([]string{res.Photos[1].Status, res.Photos[2].Status}, []string{"replayed", "added"}) {
		t.Fatalf("media add: %+v", r)
	}
	if c := counts(t, db); c["source_assets"] != before["source_assets"]+2 || c["candidate_media"] != before["candidate_media"]+2 {
		t.Fatal("the same bytes were stored twice")
	}
}
