package main_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The built binary as an OAuth resource server: a connector registered
// with `client register --oauth` signs in with an access token of a locally
// generated key set (the issuer's JWKS served here) and calls a tool; a
// token for another server is 401. `--oauth` without --public-url, and in
// mock mode without --oauth-issuer, is a usage error.
func TestHTTP_BinaryTakesAConnectorsAccessToken(t *testing.T) {
	db := filepath.Join(t.TempDir(), "trovesnap.db")
	cli(t, db, "doctor")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := key.PublicKey.Bytes()
	b64 := base64.RawURLEncoding.EncodeToString
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]any{{"kty": "EC", "crv": "P-256", "kid": "k1", "alg": "ES256", "use": "sig",
		"x": b64(pub[1:33]), "y": b64(pub[33:])}}})
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jwks)
	}))
	defer idp.Close()
	issuer := idp.URL + "/auth/v1"

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	public := "http://" + addr

	for name, argv := range map[string][]string{
		"no public url": {"mcp", "serve", "--http", "127.0.0.1:0", "--oauth-issuer", issuer},
		"no issuer":     {"mcp", "serve", "--http", "127.0.0.1:0", "--oauth", "--public-url", "http://127.0.0.1:1"},
		"http issuer":   {"mcp", "serve", "--http", "127.0.0.1:0", "--oauth-issuer", "http://idp.example/auth/v1", "--public-url", "http://127.0.0.1:1"},
	} {
		cmd := exec.Command(binary(t), argv...)
		cmd.Env = serverEnv(db)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("%s: %v %s", name, err, out)
		}
	}

	var reg struct {
		ClientID string `json:"client_id"`
		Token    string `json:"token"`
	}
	out := provision(t, db, "client", "register", "--name", "ChatGPT", "--type", "chatgpt", "--tenant", "tenant_123", "--actor", "user_90",
		"--groups", "tenant_read", "--oauth-client-id", "chatgpt-connector", "--remote-url", public, "--json", "--portable")
	if err := json.Unmarshal(out, &reg); err != nil || reg.Token != "" || reg.ClientID == "" {
		t.Fatalf("register --oauth: %v %s", err, out)
	}

	cmd := exec.Command(binary(t), "mcp", "serve", "--http", addr, "--oauth-issuer", issuer, "--public-url", public)
	cmd.Env = serverEnv(db)
	base := startListening(t, cmd)

	sign := func(aud string) string {
		now := time.Now()
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"iss": issuer, "sub": "user_90", "aud": []string{"authenticated", aud},
			"client_id": "chatgpt-connector", "role": "authenticated", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ctx := context.Background()
	tr := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer{sign(public + "/mcp")}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "openai-mcp", Version: "1.0"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if tools, err := cs.ListTools(ctx, nil); err != nil || len(tools.Tools) == 0 {
		t.Fatalf("the connector sees nothing: %v", err)
	}
	if st, _ := callStatus(t, cs, "trove_list_sales", map[string]any{}); st != "succeeded" {
		t.Fatalf("status %s", st)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Authorization", "Bearer "+sign("https://other.example/mcp"))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a token for another server: %d", resp.StatusCode)
	}
}
