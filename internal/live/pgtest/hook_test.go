package pgtest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// The Custom Access Token Hook and the ES256 tokens against a real
// cluster (bootstrap roles only, no migrations): skipped without the
// PostgreSQL binaries, except in CI.
func TestOAuthTokenWithHook_Cluster(t *testing.T) {
	if _, _, err := Binaries(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := c.Serve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := c.Exec(ctx, Bootstrap); err != nil {
		t.Fatal(err)
	}

	// No hook yet: the database's error.
	if _, err := e.OAuthTokenWithHook(ctx, "s", "c", time.Hour); err == nil || !strings.Contains(err.Error(), "trovesnap_access_token_hook") {
		t.Fatalf("no hook: %v", err)
	}

	if err := c.Exec(ctx, `
CREATE FUNCTION public.trovesnap_access_token_hook(event jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
  IF event->'claims'->>'client_id' = 'refused' THEN
    RETURN jsonb_build_object('error', jsonb_build_object('http_code', 403, 'message', 'client refused'));
  END IF;
  IF event->'claims'->>'client_id' = 'strip' THEN
    RETURN jsonb_build_object('claims', (event->'claims') - 'session_id');
  END IF;
  RETURN jsonb_build_object('claims', (event->'claims') || jsonb_build_object(
    'hook_user', current_user::text, 'hook_path', current_setting('search_path'),
    'hook_method', event->>'authentication_method', 'hook_user_id', event->>'user_id'));
END $$;
REVOKE EXECUTE ON FUNCTION public.trovesnap_access_token_hook(jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.trovesnap_access_token_hook(jsonb) TO supabase_auth_admin;
CREATE FUNCTION public.whoami() RETURNS jsonb LANGUAGE sql AS $$
  SELECT current_setting('request.jwt.claims')::jsonb || jsonb_build_object('current_user', current_user::text) $$;
GRANT EXECUTE ON FUNCTION public.whoami() TO authenticated;
`); err != nil {
		t.Fatal(err)
	}

	tok, err := e.OAuthTokenWithHook(ctx, "subj-1", "client-1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := e.verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"hook_user": "supabase_auth_admin", "hook_path": "auth", "hook_method": "oauth_provider/authorization_code",
		"hook_user_id": "subj-1", "aud": "authenticated", "client_id": "client-1", "sub": "subj-1", "iss": e.Issuer()} {
		if claims[k] != want {
			t.Errorf("%s = %v, want %v", k, claims[k], want)
		}
	}

	_, err = e.OAuthTokenWithHook(ctx, "s", "refused", time.Hour)
	var he *HookError
	if !errors.As(err, &he) || he.HTTPCode != 403 || he.Message != "client refused" {
		t.Errorf("refused: %v", err)
	}
	if _, err := e.OAuthTokenWithHook(ctx, "s", "strip", time.Hour); err == nil || !strings.Contains(err.Error(), "session_id") {
		t.Errorf("strip: %v", err)
	}

	// The PostgREST side runs an OAuth token's request as its role, with
	// its claims.
	for _, tok := range []string{tok, e.OAuthToken("subj-2", "client-2", []string{"authenticated"}, time.Hour)} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+"/rest/v1/rpc/whoami", strings.NewReader("{}"))
		req.Header.Set("apikey", "k")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		want, _ := e.verify(tok)
		if err != nil || resp.StatusCode != http.StatusOK || got["current_user"] != "authenticated" || got["client_id"] != want["client_id"] || got["session_id"] != want["session_id"] {
			t.Errorf("HTTP %d %v: %v", resp.StatusCode, got, err)
		}
	}
}
