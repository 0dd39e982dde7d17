package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/triunalabs/trovesnap/fixtures"
	"github.com/triunalabs/trovesnap/internal/catalog"
	"github.com/triunalabs/trovesnap/internal/domain"
	"github.com/triunalabs/trovesnap/internal/gate"
	"github.com/triunalabs/trovesnap/internal/mcpserver"
	"github.com/triunalabs/trovesnap/store"
)

// serveHTTP serves the HTTP handler over g on a loopback test server.
func serveHTTP(t testing.TB, g *gate.Gate, o mcpserver.HTTPOptions) *httptest.Server {
	t.Helper()
	o.Gate = g
	srv := httptest.NewServer(mcpserver.NewHTTPHandler(o))
	t.Cleanup(srv.Close)
	return srv
}

// headerTransport adds headers to every request of a real go-sdk client.
type headerTransport struct {
	base http.RoundTripper
	hdr  http.Header
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.hdr {
		r.Header[k] = v
	}
	return h.base.RoundTrip(r)
}

// connectHTTP connects a real go-sdk client over Streamable HTTP with a
// bearer token.
func connectHTTP(t testing.TB, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	hdr := http.Header{}
	if token != "" {
		hdr.Set("Authorization", "Bearer "+token)
	}
	tr := &mcp.StreamableClientTransport{Endpoint: url + mcpserver.PathMCP,
		HTTPClient: &http.Client{Transport: headerTransport{http.DefaultTransport, hdr}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "chatgpt", Version: "1.0"}, nil).Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

// post sends one raw JSON-RPC initialize to /mcp with the given headers.
func post(t testing.TB, url string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, url+mcpserver.PathMCP, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// The bearer token is the call's credential: a registered client sees its
// own tools over HTTP (the same list as over any transport), its calls run
// and are recorded as its own.
func TestHTTP_BearerTokenIsTheCallsCredential(t *testing.T) {
	e := newEnv(t)
	c, tok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	srv := serveHTTP(t, e.gate, mcpserver.HTTPOptions{})
	cs, err := connectHTTP(t, srv.URL, tok)
	if err != nil {
		t.Fatal(err)
	}
	got, want := listNames(t, cs), listNames(t, connect(t, e.gate, tok))
	if len(got) == 0 || !slices.Equal(got, want) {
		t.Fatalf("tools over HTTP %v, in memory %v", got, want)
	}
	if slices.Contains(got, "trove_execute_proposal") {
		t.Errorf("a cataloger's client sees an action: %v", got)
	}
	n := len(e.allEvents())
	env := callOn(t, cs, "trove_list_sales", map[string]any{}, nil)
	if env.Status != "succeeded" {
		t.Fatal(env.raw)
	}
	evs := e.allEvents()
	if len(evs) != n+1 || evs[len(evs)-1].Client.ID != c.ID || evs[len(evs)-1].Tool.Name != "trove_list_sales" {
		t.Fatalf("event of the HTTP call: %+v", evs[len(evs)-1])
	}
}

// T12: no token, a wrong one, a malformed one or the anonymous credential
// is a 401 naming the protected-resource metadata, and nothing is written
// (the authenticated path never falls back to the demo client or anonymous).
func TestHTTP_NoOrBadTokenIs401AndWritesNothing(t *testing.T) {
	e := newEnv(t)
	_, tok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	srv := serveHTTP(t, e.gate, mcpserver.HTTPOptions{})
	before := e.digest()
	for name, hdr := range map[string]map[string]string{
		"none":      {},
		"wrong":     {"Authorization": "Bearer tsk_" + strings.Repeat("a", 52)},
		"malformed": {"Authorization": "Bearer not-a-token"},
		"public":    {"Authorization": "Bearer " + domain.PublicCredential},
		"basic":     {"Authorization": "Basic " + tok},
	} {
		resp, body := post(t, srv.URL, hdr)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: %d %s", name, resp.StatusCode, body)
		}
		if wa := resp.Header.Get("WWW-Authenticate"); !strings.Contains(wa, `resource_metadata="`+srv.URL+mcpserver.PathPRM+mcpserver.PathMCP+`"`) {
			t.Errorf("%s: WWW-Authenticate %q", name, wa)
		}
		if strings.Contains(body, tok) || strings.Contains(body, "tsk_") {
			t.Errorf("%s: the answer repeats a token: %s", name, body)
		}
	}
	if _, err := connectHTTP(t, srv.URL, "tsk_"+strings.Repeat("b", 52)); err == nil {
		t.Error("a client with a wrong token connected")
	}
	if after := e.digest(); !jsonEqualMaps(before, after) {
		t.Error("a refused request changed the store")
	}
	// The metadata the 401 names describes this resource.
	resp, err := http.Get(srv.URL + mcpserver.PathPRM + mcpserver.PathMCP)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var prm struct {
		Resource               string   `json:"resource"`
		BearerMethodsSupported []string `json:"bearer_methods_supported"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&prm); err != nil || resp.StatusCode != http.StatusOK || prm.Resource != srv.URL+mcpserver.PathMCP {
		t.Errorf("protected-resource metadata: %d %+v %v", resp.StatusCode, prm, err)
	}
}

func jsonEqualMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// T12: a client suspended while connected sees no tools on its next request
// and its calls answer client_suspended in a tool result; revoked, its
// next request is a 401.
func TestHTTP_SuspendedClientSeesNoToolsOnItsNextRequest(t *testing.T) {
	e := newEnv(t)
	c, tok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	srv := serveHTTP(t, e.gate, mcpserver.HTTPOptions{})
	cs, err := connectHTTP(t, srv.URL, tok)
	if err != nil {
		t.Fatal(err)
	}
	if len(listNames(t, cs)) == 0 {
		t.Fatal("active client sees nothing")
	}
	other, err := store.Open(context.Background(), e.path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.SetClientStatus(context.Background(), c.ID, domain.ClientSuspended, fixtures.DemoUserID); err != nil {
		t.Fatal(err)
	}
	before := e.digest()
	if got := listNames(t, cs); len(got) != 0 {
		t.Errorf("suspended client sees %v", got)
	}
	wantCode(t, callOn(t, cs, "trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "x", "idempotency_key": "http-susp-0001"}, nil),
		"blocked", "client_suspended")
	assertOnlyEventsChanged(t, before, e.digest())
	if _, err := other.SetClientStatus(context.Background(), c.ID, domain.ClientRevoked, fixtures.DemoUserID); err != nil {
		t.Fatal(err)
	}
	if resp, _ := post(t, srv.URL, map[string]string{"Authorization": "Bearer " + tok}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("revoked client's request: %d", resp.StatusCode)
	}
}

// T12: a client over its rate limit gets rate_limited over HTTP too, and
// nothing is written but the call's event.
func TestHTTP_RateLimitedClientWritesNothing(t *testing.T) {
	e := newEnv(t)
	c, tok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	l := domain.DefaultLimits()
	l.CandidateWritesPerMinute = 1
	if err := e.st.SetLimits(context.Background(), fixtures.DemoTenantID, c.ID, l); err != nil {
		t.Fatal(err)
	}
	srv := serveHTTP(t, e.gate, mcpserver.HTTPOptions{})
	cs, err := connectHTTP(t, srv.URL, tok)
	if err != nil {
		t.Fatal(err)
	}
	write := map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Remote lamp", "idempotency_key": "http-limit-0001"}
	if env := callOn(t, cs, "trove_create_candidate", write, nil); env.Status != "succeeded_with_warnings" {
		t.Fatalf("first write: %s", env.raw)
	}
	before := e.digest()
	write["idempotency_key"] = "http-limit-0002"
	wantCode(t, callOn(t, cs, "trove_create_candidate", write, nil), "blocked", "rate_limited")
	assertOnlyEventsChanged(t, before, e.digest())
}

// T12: a Host not allowed (DNS rebinding) or an Origin not allowed is a
// 403 before any token is read, and nothing is written; an allowed origin
// and host reach authentication.
func TestHTTP_HostAndOriginNotAllowedAre403(t *testing.T) {
	e := newEnv(t)
	_, tok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	srv := serveHTTP(t, e.gate, mcpserver.HTTPOptions{AllowedOrigins: []string{"https://chatgpt.com"}})
	auth := "Bearer " + tok
	before := e.digest()
	for name, hdr := range map[string]map[string]string{
		"host":           {"Host": "evil.example", "Authorization": auth},
		"host with port": {"Host": "evil.example:80", "Authorization": auth},
		"origin":         {"Origin": "https://evil.example", "Authorization": auth},
		"null origin":    {"Origin": "null", "Authorization": auth},
	} {
		if resp, body := post(t, srv.URL, hdr); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d %s", name, resp.StatusCode, body)
		}
	}
	if after := e.digest(); !jsonEqualMaps(before, after) {
		t.Error("a refused request changed the store")
	}
	if resp, body := post(t, srv.URL, map[string]string{"Origin": "https://chatgpt.com", "Authorization": auth}); resp.StatusCode != http.StatusOK {
		t.Errorf("allowed origin: %d %s", resp.StatusCode, body)
	}
	if resp, _ := post(t, srv.URL, map[string]string{"Host": "localhost"}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("loopback host without a token: %d", resp.StatusCode)
	}
	// A loopback server naming no origin takes loopback origins (as the
	// SDKs' DNS-rebinding protection does), and only those.
	loop := serveHTTP(t, e.gate, mcpserver.HTTPOptions{})
	for origin, want := range map[string]int{"http://localhost:5173": http.StatusOK, "http://127.0.0.1": http.StatusOK,
		"http://127.0.0.1.evil.example": http.StatusForbidden, "https://localhost.evil.example:443": http.StatusForbidden, "null": http.StatusForbidden} {
		if resp, _ := post(t, loop.URL, map[string]string{"Origin": origin, "Authorization": auth}); resp.StatusCode != want {
			t.Errorf("loopback server, origin %s: %d, want %d", origin, resp.StatusCode, want)
		}
	}
	if resp, _ := post(t, loop.URL, map[string]string{"Sec-Fetch-Site": "cross-site", "Authorization": auth}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site browser request without Origin: %d", resp.StatusCode)
	}
	// Named hosts replace the loopback names.
	named := serveHTTP(t, e.gate, mcpserver.HTTPOptions{AllowedHosts: []string{"mcp.example.com"}})
	if resp, _ := post(t, named.URL, map[string]string{"Host": "mcp.example.com", "Authorization": auth}); resp.StatusCode != http.StatusOK {
		t.Errorf("allowed host: %d", resp.StatusCode)
	}
	if resp, _ := post(t, named.URL, map[string]string{"Authorization": auth}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a loopback name on a server of named hosts: %d", resp.StatusCode)
	}
	// Probes answer whatever the Host (a load balancer probes by IP).
	for _, p := range []string{mcpserver.PathHealthz, mcpserver.PathReadyz} {
		req, _ := http.NewRequest(http.MethodGet, named.URL+p, nil)
		req.Host = "10.0.0.5:8080"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s by IP: %d", p, resp.StatusCode)
		}
	}
}

// /healthz answers while the process runs; /readyz answers 503 when the
// store does not.
func TestHTTP_HealthAndReadiness(t *testing.T) {
	e := newEnv(t)
	srv := serveHTTP(t, e.gate, mcpserver.HTTPOptions{Ready: e.st.Ping})
	get := func(path string) int {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if h, r := get(mcpserver.PathHealthz), get(mcpserver.PathReadyz); h != http.StatusOK || r != http.StatusOK {
		t.Fatalf("healthz %d readyz %d", h, r)
	}
	if err := e.st.Close(); err != nil {
		t.Fatal(err)
	}
	if h, r := get(mcpserver.PathHealthz), get(mcpserver.PathReadyz); h != http.StatusOK || r != http.StatusServiceUnavailable {
		t.Errorf("closed store: healthz %d readyz %d", h, r)
	}
}

// Stateless replicas: two servers, each with its own gate and store handle
// on one database file (two processes in real life), serve one client's
// requests in turn; a write retried on the other replica with the same
// idempotency key replays instead of writing twice.
func TestHTTP_StatelessReplicasShareIdempotency(t *testing.T) {
	e := newEnv(t)
	_, tok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	other, err := store.Open(context.Background(), e.path, store.Options{Mode: domain.ModeMock, Clock: e.clock, IDs: domain.RandomIDs{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	g2 := gate.New(gate.Options{Backend: other, Mode: domain.ModeMock, Clock: e.clock, IDs: domain.RandomIDs{}, ServerVersion: "test"})
	a := serveHTTP(t, e.gate, mcpserver.HTTPOptions{Stateless: true})
	b := serveHTTP(t, g2, mcpserver.HTTPOptions{Stateless: true})
	csA, err := connectHTTP(t, a.URL, tok)
	if err != nil {
		t.Fatal(err)
	}
	csB, err := connectHTTP(t, b.URL, tok)
	if err != nil {
		t.Fatal(err)
	}
	write := map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "Replica lamp", "idempotency_key": "http-replica-0001"}
	first := callOn(t, csA, "trove_create_candidate", write, nil)
	if first.Status != "succeeded_with_warnings" {
		t.Fatal(first.raw)
	}
	n := e.counts()["inventory_candidates"]
	again := callOn(t, csB, "trove_create_candidate", write, nil)
	if again.Status != first.Status || !strings.Contains(again.raw, `"idempotent_replay":true`) {
		t.Fatalf("the retry on the other replica: %s", again.raw)
	}
	if got := e.counts()["inventory_candidates"]; got != n {
		t.Errorf("candidates %d → %d: the retry wrote again", n, got)
	}
}

// connectPublic connects a real go-sdk client to the public path, with the
// given headers (none for a buyer's agent).
func connectPublic(t testing.TB, url string, hdr http.Header) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url + mcpserver.PathPublicMCP,
		HTTPClient: &http.Client{Transport: headerTransport{http.DefaultTransport, hdr}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "buyer-agent", Version: "1.0"}, nil).Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// §11: a buyer's agent reaches the public tools at /public/mcp without a
// token, and nothing else: the list is exactly the anonymous principal's
// (all public reads), a seller's tool is refused, and a token sent along
// is ignored, never an upgrade.
func TestHTTP_PublicPathShowsOnlyPublicToolsWithoutAToken(t *testing.T) {
	e := newEnv(t)
	_, owner := e.register(fixtures.DemoTenantID, fixtures.DemoUserID)
	srv := serveHTTP(t, e.gate, mcpserver.HTTPOptions{})
	var want []string
	for _, tool := range e.gate.VisibleTools(context.Background(), domain.PublicCredential) {
		if tool.Tier != catalog.TierPublicRead {
			t.Fatalf("the anonymous principal sees %s (%s)", tool.Name, tool.Tier)
		}
		want = append(want, tool.Name)
	}
	if len(want) != 4 {
		t.Fatalf("public tools: %v", want)
	}
	hdr := http.Header{}
	hdr.Set("Authorization", "Bearer "+owner)
	for name, cs := range map[string]*mcp.ClientSession{"no token": connectPublic(t, srv.URL, nil), "owner's token": connectPublic(t, srv.URL, hdr)} {
		if got := listNames(t, cs); !slices.Equal(got, want) {
			t.Errorf("%s: tools %v, want %v", name, got, want)
		}
		if env := callOn(t, cs, "trove_get_public_sale", map[string]any{"sale_id": fixtures.PublishedSaleID}, nil); env.Status != "succeeded" {
			t.Errorf("%s: public sale: %s", name, env.raw)
		}
		before := e.digest()
		env := callOn(t, cs, "trove_create_candidate", map[string]any{"sale_id": fixtures.PublishedSaleID, "title": "x", "idempotency_key": "public-path-0001"}, nil)
		if env.Status != "blocked" || len(env.Errors) == 0 {
			t.Errorf("%s: a seller's tool on the public path: %s", name, env.raw)
		}
		assertOnlyEventsChanged(t, before, e.digest())
	}
}

// §11: the public path is bounded per remote address: past the bound a
// request is a 429 with Retry-After, before it reaches the gate (nothing
// is written, not even an event).
func TestHTTP_PublicPathIsBoundedPerAddress(t *testing.T) {
	e := newEnv(t)
	srv := serveHTTP(t, e.gate, mcpserver.HTTPOptions{PublicPerMinute: 3})
	postPublic := func() *http.Response {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`
		req, _ := http.NewRequest(http.MethodPost, srv.URL+mcpserver.PathPublicMCP, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-Forwarded-For", "203.0.113.9") // not trusted: the connection's address counts
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for i := range 3 {
		if resp := postPublic(); resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	before := e.digest()
	resp := postPublic()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("past the bound: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if after := e.digest(); !jsonEqualMaps(before, after) {
		t.Error("a refused request changed the store")
	}
	// The authenticated path has its own bounds (the client's limits).
	big := httptest.NewServer(mcpserver.NewHTTPHandler(mcpserver.HTTPOptions{Gate: e.gate}))
	defer big.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"trove_get_public_sale","arguments":{"sale_id":"` + strings.Repeat("x", 70<<10) + `"}}}`
	req, _ := http.NewRequest(http.MethodPost, big.URL+mcpserver.PathPublicMCP, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 70 KiB body on the public path: %v %v", r, err)
	} else {
		r.Body.Close()
	}
	if r, _ := post(t, srv.URL, nil); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("/mcp after the public bound: %d", r.StatusCode)
	}
}

// OpenTelemetry: each HTTP request is a server span, and the tool_call span
// of a call it carries is its child (same trace), on both paths.
func TestHTTP_CallSpansJoinTheRequestSpan(t *testing.T) {
	e, tel := newAudEnv(t, "")
	_, tok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	srv := serveHTTP(t, e.gate, mcpserver.HTTPOptions{})
	cs, err := connectHTTP(t, srv.URL, tok)
	if err != nil {
		t.Fatal(err)
	}
	if env := callOn(t, cs, "trove_list_sales", map[string]any{}, nil); env.Status != "succeeded" {
		t.Fatal(env.raw)
	}
	pub := connectPublic(t, srv.URL, nil)
	if env := callOn(t, pub, "trove_get_public_sale", map[string]any{"sale_id": fixtures.PublishedSaleID}, nil); env.Status != "succeeded" {
		t.Fatal(env.raw)
	}
	_, _ = cs.Close(), pub.Close()
	srv.Close()                      // waits for every request's handler, so every span has ended
	httpSpans := map[string]string{} // span id → route
	var calls []sdktrace.ReadOnlySpan
	for _, s := range tel.spans.Ended() {
		switch s.Name() {
		case "trovesnap.http.request":
			if s.SpanKind() != trace.SpanKindServer {
				t.Errorf("HTTP span kind %v", s.SpanKind())
			}
			for _, a := range s.Attributes() {
				if a.Key == "http.route" {
					httpSpans[s.SpanContext().SpanID().String()] = a.Value.AsString()
				}
			}
		case "trovesnap.mcp.tool_call":
			calls = append(calls, s)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("%d tool_call spans", len(calls))
	}
	routes := []string{}
	for _, c := range calls {
		route, ok := httpSpans[c.Parent().SpanID().String()]
		if !ok || c.Parent().TraceID() != c.SpanContext().TraceID() {
			t.Errorf("tool_call span not a child of an HTTP request span: parent %v", c.Parent())
		}
		routes = append(routes, route)
	}
	slices.Sort(routes)
	if !slices.Equal(routes, []string{mcpserver.PathMCP, mcpserver.PathPublicMCP}) {
		t.Errorf("call spans under routes %v", routes)
	}
}

// A remote address past its failed authentications of the minute gets 429
// before any token is looked up (each is a lookup, an RPC in live mode),
// and nothing is written.
func TestHTTP_FailedAuthenticationsAreBoundedPerAddress(t *testing.T) {
	e := newEnv(t)
	_, tok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	srv := serveHTTP(t, e.gate, mcpserver.HTTPOptions{AuthFailuresPerMinute: 3})
	if resp, _ := post(t, srv.URL, map[string]string{"Authorization": "Bearer " + tok}); resp.StatusCode != http.StatusOK {
		t.Fatalf("a good token: %d", resp.StatusCode)
	}
	before := e.digest()
	for i := range 3 {
		if resp, _ := post(t, srv.URL, map[string]string{"Authorization": "Bearer tsk_" + strings.Repeat("c", 52)}); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d", i, resp.StatusCode)
		}
	}
	for _, auth := range []string{"Bearer tsk_" + strings.Repeat("d", 52), "Bearer " + tok} {
		resp, _ := post(t, srv.URL, map[string]string{"Authorization": auth})
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Errorf("past the bound (%s…): %d", auth[:12], resp.StatusCode)
		}
	}
	if after := e.digest(); !jsonEqualMaps(before, after) {
		t.Error("a refused request changed the store")
	}
	// Successes count nothing: a fresh server takes a good token's many requests.
	ok := serveHTTP(t, e.gate, mcpserver.HTTPOptions{AuthFailuresPerMinute: 1})
	for i := range 5 {
		if resp, _ := post(t, ok.URL, map[string]string{"Authorization": "Bearer " + tok}); resp.StatusCode != http.StatusOK {
			t.Fatalf("good request %d: %d", i, resp.StatusCode)
		}
	}
}

// CORS for an allowed origin: its preflight is answered before
// authentication (a preflight carries no token) with the methods and
// headers MCP uses; its answers name it and expose Mcp-Session-Id. Another
// origin's preflight is refused, and nothing is written.
func TestHTTP_AllowedOriginGetsCORS(t *testing.T) {
	e := newEnv(t)
	_, tok := e.register(fixtures.DemoTenantID, fixtures.CatalogerUserID)
	srv := serveHTTP(t, e.gate, mcpserver.HTTPOptions{AllowedOrigins: []string{"https://chatgpt.com"}})
	before := e.digest()
	preflight := func(origin string) *http.Response {
		req, _ := http.NewRequest(http.MethodOptions, srv.URL+mcpserver.PathMCP, nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, mcp-session-id")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := preflight("https://chatgpt.com")
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "https://chatgpt.com" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Errorf("allowed preflight: %d %v", resp.StatusCode, resp.Header)
	}
	if resp := preflight("https://evil.example"); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("other origin's preflight: %d %v", resp.StatusCode, resp.Header)
	}
	if after := e.digest(); !jsonEqualMaps(before, after) {
		t.Error("a preflight changed the store")
	}
	r, _ := post(t, srv.URL, map[string]string{"Origin": "https://chatgpt.com", "Authorization": "Bearer " + tok})
	if r.StatusCode != http.StatusOK || r.Header.Get("Access-Control-Allow-Origin") != "https://chatgpt.com" ||
		!strings.Contains(r.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") {
		t.Errorf("allowed origin's call: %d %v", r.StatusCode, r.Header)
	}
	if r, _ := post(t, srv.URL, map[string]string{"Origin": "https://chatgpt.com"}); r.StatusCode != http.StatusUnauthorized ||
		r.Header.Get("Access-Control-Allow-Origin") != "https://chatgpt.com" {
		t.Errorf("allowed origin without a token: %d (a page must read the 401) %v", r.StatusCode, r.Header)
	}
}
