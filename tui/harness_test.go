package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/gate"
	"github.com/triunalabs/trovesnap/internal/mcpserver"
	"github.com/triunalabs/trovesnap/store"
)

// harness is one real store on a temp-dir SQLite file seeded from the
// fixtures, the real gate and MCP server in front of it with a go-sdk
// client over in-memory transports (the agent), and the terminal's model
// over the same store (the seller). Ticks are off: tests move the fixed
// clock and send tickMsg themselves.
type harness struct {
	t     *testing.T
	st    *store.Store
	clock *domain.FixedClock
	ids   *domain.SeqIDs
	cs    *mcp.ClientSession
	path  string
	keyN  int
	quit  bool
}

// seeded is a store file seeded from the fixtures once per test binary;
// each harness works on its own copy. Seeding mints no ids and stamps
// fixture times only, so a copy is the same as a fresh seed, and the race
// detector's run stays short.
var seeded struct {
	once sync.Once
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if seeded.dir != "" {
		_ = os.RemoveAll(seeded.dir)
	}
	os.Exit(code)
}

func seededCopy(t *testing.T) string {
	t.Helper()
	seeded.once.Do(func() {
		if seeded.dir, seeded.err = os.MkdirTemp("", "trovesnap-tui-seed-"); seeded.err != nil {
			return
		}
		seed := fixtures.Dataset()
		st, err := store.Open(context.Background(), filepath.Join(seeded.dir, "seed.db"),
			store.Options{Mode: domain.ModeMock, Clock: domain.NewFixedClock(fixtures.Epoch), IDs: domain.NewSeqIDs(), Seed: &seed})
		if err != nil {
			seeded.err = err
			return
		}
		seeded.err = st.Close() // the last close checkpoints the WAL into the file
	})
	if seeded.err != nil {
		t.Fatalf("seeding: %v", seeded.err)
	}
	path := filepath.Join(t.TempDir(), "trovesnap.db")
	b, err := os.ReadFile(filepath.Join(seeded.dir, "seed.db"))
	if err == nil {
		err = os.WriteFile(path, b, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	ctx := context.Background()
	path := seededCopy(t)
	h := &harness{t: t, clock: domain.NewFixedClock(fixtures.Epoch), ids: domain.NewSeqIDs(), path: path}
	st, err := store.Open(ctx, path, store.Options{Mode: domain.ModeMock, Clock: h.clock, IDs: h.ids})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	h.st = st
	g := gate.New(gate.Options{Backend: st, Mode: domain.ModeMock, Clock: h.clock, IDs: h.ids, ServerVersion: "test"})
	// No credential in mock mode: the fixtures' demo client of user_88.
	srv := mcpserver.New(mcpserver.Options{Gate: g, Credential: "", Transport: "inmemory"})
	sct, cct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, sct, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.cs, err = mcp.NewClient(&mcp.Implementation{Name: "claude-code", Version: "2.1.0"}, nil).Connect(ctx, cct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.cs.Close(); _ = ss.Wait() })
	return h
}

// storeBackend is the store as the terminal sees it (the command's
// approveBackend is the same: the store acting as the seller).
type storeBackend struct{ store.SellerView }

func riskOf(tool string) string {
	if t, ok := catalog.Lookup(tool); ok {
		return string(t.Risk)
	}
	return ""
}

func (h *harness) options(actor string) Options {
	return Options{
		Backend: storeBackend{h.st.AsSeller(actor)}, TenantID: fixtures.DemoTenantID, ActorID: actor, Mode: "mock",
		Clock: h.clock, IDs: h.ids, RiskOf: riskOf, ChangeVisible: catalog.ChangeVisible, NoColor: true, Tick: -1,
	}
}

// open builds the model as `trovesnap approve --as actor` does and runs
// its first load, at 80×24.
func (h *harness) open(actor string) Model {
	h.t.Helper()
	m := New(context.Background(), h.options(actor))
	m = h.run(m, m.Init())
	return h.update(m, tea.WindowSizeMsg{Width: 80, Height: 24})
}

// envelope is the part of the §22 envelope these tests read.
type envelope struct {
	Status string          `json:"status"`
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"errors"`
	raw string
}

func (h *harness) call(tool string, args map[string]any) envelope {
	h.t.Helper()
	res, err := h.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		h.t.Fatalf("%s: %v", tool, err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	var e envelope
	if err := json.Unmarshal([]byte(text), &e); err != nil {
		h.t.Fatalf("%s: %v\n%s", tool, err, text)
	}
	e.raw = text
	return e
}

func (h *harness) nextKey(prefix string) string {
	h.keyN++
	return fmt.Sprintf("%s-%04d", prefix, h.keyN)
}

// propose asks for a proposal as the agent would and returns its id.
func (h *harness) propose(tool string, args map[string]any) string {
	h.t.Helper()
	args["idempotency_key"] = h.nextKey("prop")
	e := h.call(tool, args)
	if e.Status != "proposed" {
		h.t.Fatalf("%s: %s", tool, e.raw)
	}
	var v struct {
		ProposalID string `json:"proposal_id"`
	}
	if err := json.Unmarshal(e.Data, &v); err != nil || v.ProposalID == "" {
		h.t.Fatalf("%s: no proposal id: %s", tool, e.raw)
	}
	return v.ProposalID
}

func (h *harness) proposePromotion() string {
	return h.propose("trove_propose_candidate_promotion", map[string]any{"candidate_id": fixtures.DemoCandidateID, "expected_version": 3})
}

// execute runs a proposal's controlled action as the agent would.
func (h *harness) execute(tool, proposalID string) envelope {
	h.t.Helper()
	return h.call(tool, map[string]any{"proposal_id": proposalID, "idempotency_key": h.nextKey("exec")})
}

// item finds a fixture item of the demo tenant.
func item(t *testing.T, ok func(domain.Item) bool) domain.Item {
	t.Helper()
	for _, it := range fixtures.Dataset().Items {
		if it.TenantID == fixtures.DemoTenantID && ok(it) {
			return it
		}
	}
	t.Fatal("no such fixture item")
	return domain.Item{}
}

func draftItemWithoutQR(t *testing.T) domain.Item {
	return item(t, func(it domain.Item) bool { return it.Status == domain.ItemDraft && it.QRCode == "" })
}

func readyItem(t *testing.T) domain.Item {
	return item(t, func(it domain.Item) bool {
		return it.Status == domain.ItemReady && it.PriceCents != nil && it.Category != "" &&
			slices.ContainsFunc(it.Photos, func(p domain.Photo) bool { return p.Published })
	})
}

// kp builds a key press as the terminal would deliver it.
func kp(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	}
	r := []rune(s)
	return tea.KeyPressMsg{Code: r[0], Text: s}
}

// act returns the Action the screen on top answers a key with. Screens
// are values without side effects, so asking does not change the model.
func act(m Model, k string) Action {
	m.s.bodyH = m.bodyHeight(m.top())
	_, a := m.top().key(kp(k), &m.s)
	return a
}

// press feeds keys one by one, running each command to completion as the
// Bubble Tea runtime would (ticks are off, so nothing sleeps).
func (h *harness) press(m Model, ks ...string) Model {
	h.t.Helper()
	for _, k := range ks {
		m = h.update(m, kp(k))
	}
	return m
}

// typeText types a string into a focused field.
func (h *harness) typeText(m Model, s string) Model {
	for _, r := range s {
		m = h.update(m, tea.KeyPressMsg{Code: r, Text: string(r)})
	}
	return m
}

func (h *harness) update(m Model, msg tea.Msg) Model {
	nm, cmd := m.Update(msg)
	return h.run(nm.(Model), cmd)
}

func (h *harness) run(m Model, cmd tea.Cmd) Model {
	queue := []tea.Cmd{cmd}
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case tea.BatchMsg:
			queue = append(queue, msg...)
		case tea.QuitMsg:
			h.quit = true
		default:
			nm, next := m.Update(msg)
			m = nm.(Model)
			queue = append(queue, next)
		}
	}
	return m
}

// tick advances the fixed clock and delivers the clock's tick (which
// polls when a poll interval has passed).
func (h *harness) tick(m Model, d time.Duration) Model {
	h.clock.Advance(d)
	return h.update(m, tickMsg{at: h.clock.Now()})
}

// plain is the view as plain text (goldens and assertions ignore styling).
func plain(m Model) string { return ansi.Strip(m.View().Content) }

func mustContain(t *testing.T, m Model, want ...string) {
	t.Helper()
	s := plain(m)
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Fatalf("screen lacks %q:\n%s", w, s)
		}
	}
}

func (h *harness) grants(status string) []domain.Grant {
	h.t.Helper()
	gs, err := h.st.ListGrants(context.Background(), fixtures.DemoTenantID, status)
	if err != nil {
		h.t.Fatal(err)
	}
	return gs
}

func (h *harness) proposal(id string) domain.Proposal {
	h.t.Helper()
	p, err := h.st.GetProposalAdmin(context.Background(), fixtures.DemoTenantID, id)
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

func (h *harness) digest() map[string]string {
	h.t.Helper()
	d, err := h.st.Digest(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return d
}
