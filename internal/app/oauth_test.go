package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"munin/internal/config"
	"munin/internal/memory"
	"munin/internal/service"
)

// TestPublicURLSwitchesOAuthOn: with --public-url the server advertises
// its authorization server and names the resource metadata in a 401; its
// origin passes the Origin check; a bad URL or a cluster stops Open with
// an error naming why.
func TestPublicURLSwitchesOAuthOn(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := Open(Config{Config: config.Config{Server: config.Server{PublicURL: "https://Munin.example.com/"}, Storage: config.Storage{DataDir: t.TempDir()}}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	if !a.Svc.OAuthEnabled() {
		t.Fatal("OAuth off with a public URL")
	}
	h := a.Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/oauth-authorization-server", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"issuer":"https://munin.example.com"`) {
		t.Fatalf("AS metadata: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{}`))
	req.Header.Set("Origin", "https://munin.example.com")
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Header().Get("WWW-Authenticate"), `resource_metadata="https://munin.example.com/.well-known/oauth-protected-resource/mcp"`) {
		t.Errorf("401 at /mcp from the public origin: %d %q", rec.Code, rec.Header().Get("WWW-Authenticate"))
	}

	// The authorize page is the web UI's: an unknown client is shown an
	// error, never redirected.
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/authorize?response_type=code&client_id=nobody&redirect_uri=https%3A%2F%2Fevil.example%2Fcb", nil))
	if rec.Code < 400 || rec.Code >= 500 || rec.Header().Get("Location") != "" {
		t.Errorf("authorize for an unknown client: %d Location %q; want a 4xx page and no redirect", rec.Code, rec.Header().Get("Location"))
	}

	// The token and registration endpoints are mounted: a registration
	// from another origin (a browser-based client) gets its client id.
	rec = httptest.NewRecorder()
	req = httptest.NewRequest(http.MethodPost, "/register", strings.NewReader(`{"redirect_uris":["https://claude.ai/api/mcp/auth_callback"],"client_name":"Claude"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "https://inspector.example")
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated || !strings.Contains(rec.Body.String(), `"client_id"`) {
		t.Errorf("registration: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	req = httptest.NewRequest(http.MethodPost, "/token", strings.NewReader(`grant_type=authorization_code&code=munin_oac_x&client_id=x&code_verifier=`+strings.Repeat("a", 43)))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), `"invalid_client"`) {
		t.Errorf("token of an unknown client: %d %s", rec.Code, rec.Body)
	}

	for _, tc := range []struct {
		cfg  config.Config
		want string
	}{
		{config.Config{Server: config.Server{PublicURL: "http://munin.example.com"}}, "https"},
		{config.Config{Server: config.Server{PublicURL: "https://munin.example.com/munin"}}, "origin only"},
		{config.Config{Server: config.Server{PublicURL: "https://munin.example.com"}, Cluster: config.Cluster{Enabled: true}}, "cluster"},
	} {
		tc.cfg.Storage.DataDir = t.TempDir()
		if _, err := Open(Config{Config: tc.cfg, Logger: quiet}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%+v): %v, want an error about %s", tc.cfg.Server, err, tc.want)
		}
	}
}

// TestOAuthClientsFile: --oauth-clients pre-registers clients; one removed
// from the file is gone at the next start; the file needs --public-url and
// a bad file stops Open with an error naming the problem.
func TestOAuthClientsFile(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir, data := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "clients.json")
	open := func(content string) (*App, error) {
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return Open(Config{Config: config.Config{Server: config.Server{PublicURL: "https://munin.example.com", OAuthClients: file},
			Storage: config.Storage{DataDir: data}}, Logger: quiet})
	}
	a, err := open(`[{"client_id":"team-gpt","client_name":"ChatGPT (team)","redirect_uris":["https://chatgpt.com/connector_platform_oauth_redirect"]},
		{"client_id":"desk","redirect_uris":["http://127.0.0.1/callback"]}]`)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Svc.OAuthClient(context.Background(), "team-gpt")
	if err != nil || c.Name != "ChatGPT (team)" || c.RedirectURIs[0] != "https://chatgpt.com/connector_platform_oauth_redirect" {
		t.Fatalf("configured client: %+v %v", c, err)
	}
	// A sign-in with it, so that removing it must take the grant along.
	key, err := a.Svc.Bootstrap(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	person, err := a.Svc.Authenticate(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Svc.AuthorizeOAuth(context.Background(), person, service.OAuthRequest{ClientID: "team-gpt",
		RedirectURI: c.RedirectURIs[0], ResponseType: "code", CodeChallengeMethod: "S256",
		CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a, err = open(`[{"client_id":"desk","redirect_uris":["http://127.0.0.1/callback"]}]`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Svc.OAuthClient(context.Background(), "team-gpt"); memory.OAuthErrorCode(err) != "invalid_client" {
		t.Errorf("client removed from the file: %v, want invalid_client", err)
	}
	if _, err := a.Svc.OAuthClient(context.Background(), "desk"); err != nil {
		t.Errorf("client still in the file: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := open(`[{"client_id":"x","client_secret":"s","redirect_uris":["https://a.example/cb"]}]`); err == nil || !strings.Contains(err.Error(), "client_secret") {
		t.Errorf("a client with a secret: %v", err)
	}
	if _, err := Open(Config{Config: config.Config{Server: config.Server{OAuthClients: file}, Storage: config.Storage{DataDir: t.TempDir()}}, Logger: quiet}); err == nil || !strings.Contains(err.Error(), "--public-url") {
		t.Errorf("--oauth-clients without --public-url: %v", err)
	}
}
