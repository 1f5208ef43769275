package httpserver

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"munin/internal/memory"
	"munin/internal/oauth"
	"munin/internal/service"
	"munin/internal/servicetest"
)

const publicURL = "https://munin.example.com"

// oauthStack is the front door with OAuth on, over a service that signs
// clients in, and an access token of agent-1's key (acme/a).
type oauthStack struct {
	base, access string
}

func newOAuthStack(t *testing.T, on bool) *oauthStack {
	t.Helper()
	ctx := context.Background()
	env := servicetest.New(t, service.Options{OAuth: &service.OAuthOptions{Resources: []string{publicURL + "/mcp", publicURL + "/api/v1"}}})
	_, person := env.Key(t, "acme", "a", "agent-1", memory.RoleWrite)
	client, err := env.Svc.RegisterOAuthClient(ctx, memory.ClientRegistration{Name: "Claude", RedirectURIs: []string{"https://claude.ai/cb"}})
	if err != nil {
		t.Fatal(err)
	}
	verifier := oauth2.GenerateVerifier()
	code, err := env.Svc.AuthorizeOAuth(ctx, person, service.OAuthRequest{ClientID: client.ID, RedirectURI: "https://claude.ai/cb",
		ResponseType: "code", CodeChallenge: oauth2.S256ChallengeFromVerifier(verifier), CodeChallengeMethod: "S256", Resource: publicURL + "/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := env.Svc.ExchangeOAuthCode(ctx, service.OAuthCodeExchange{ClientID: client.ID, Code: code, Verifier: verifier, RedirectURI: "https://claude.ai/cb"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if on {
		cfg.OAuth = &oauth.Config{PublicURL: publicURL}
	}
	srv := New(cfg, env.Svc, echoKey(), echoKey())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return &oauthStack{base: "http://" + ln.Addr().String(), access: tok.Access}
}

// do sends a request with an optional bearer and Origin and returns status,
// WWW-Authenticate and body.
func (s *oauthStack) do(t *testing.T, method, path, bearer, origin string) (int, string, string) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	}
	req, _ := http.NewRequest(method, s.base+path, body)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
}

// TestOAuthFrontDoor: with OAuth on, a token acts as its keys at the
// resource it was issued for and nowhere else; every 401 of /mcp and
// /api/v1 names its resource metadata, while the key-only endpoint
// advertises nothing and takes no token; discovery is open to any origin.
func TestOAuthFrontDoor(t *testing.T) {
	s := newOAuthStack(t, true)
	mcpMeta := `resource_metadata="` + publicURL + `/.well-known/oauth-protected-resource/mcp"`

	code, _, body := s.do(t, http.MethodPost, "/mcp", s.access, "")
	if code != http.StatusOK || !strings.Contains(body, `"agent":"agent-1"`) || !strings.Contains(body, `"acme/a"`) {
		t.Fatalf("token at /mcp: %d %s; want the key's caller", code, body)
	}
	code, ch, _ := s.do(t, http.MethodPost, "/mcp", "", "")
	if code != http.StatusUnauthorized || !strings.Contains(ch, mcpMeta) || strings.Contains(ch, "invalid_token") {
		t.Errorf("no credentials at /mcp: %d %q; want 401 naming %s", code, ch, mcpMeta)
	}
	code, ch, _ = s.do(t, http.MethodPost, "/mcp", memory.OAuthAccessPrefix+"forged", "")
	if code != http.StatusUnauthorized || !strings.Contains(ch, mcpMeta) || !strings.Contains(ch, `error="invalid_token"`) {
		t.Errorf("forged token: %d %q; want 401 invalid_token with the metadata", code, ch)
	}
	code, ch, _ = s.do(t, http.MethodGet, "/api/v1/projects", s.access, "")
	if code != http.StatusUnauthorized || !strings.Contains(ch, "/.well-known/oauth-protected-resource/api/v1") {
		t.Errorf("token of /mcp at /api/v1: %d %q; want 401 naming the REST metadata", code, ch)
	}
	code, ch, body = s.do(t, http.MethodPost, KeyOnlyMCP, s.access, "")
	if code != http.StatusUnauthorized || strings.Contains(ch, "resource_metadata") || !strings.Contains(body, "not accepted here") {
		t.Errorf("token at %s: %d %q %s; want a plain 401", KeyOnlyMCP, code, ch, body)
	}
	code, ch, _ = s.do(t, http.MethodPost, KeyOnlyMCP, "", "")
	if code != http.StatusUnauthorized || ch != `Bearer realm="munin"` {
		t.Errorf("no credentials at %s: %d %q; want the plain challenge", KeyOnlyMCP, code, ch)
	}
	if code, _, body := s.do(t, http.MethodGet, oauth.WellKnownResource+KeyOnlyMCP, "", ""); code != http.StatusNotFound {
		t.Errorf("metadata of %s: %d %s; want none", KeyOnlyMCP, code, body)
	}

	for _, path := range []string{oauth.WellKnownServer, oauth.WellKnownResource + "/mcp", oauth.WellKnownResource + "/api/v1"} {
		if code, _, body := s.do(t, http.MethodGet, path, "", "https://inspector.example"); code != http.StatusOK || !strings.Contains(body, publicURL) {
			t.Errorf("GET %s from another origin: %d %s; want the document", path, code, body)
		}
	}
	if code, _, _ := s.do(t, http.MethodPost, "/mcp", s.access, "https://evil.example"); code != http.StatusForbidden {
		t.Errorf("token at /mcp from another origin: %d; want 403 (the Origin check stays)", code)
	}
}

// TestOAuthOffAdvertisesNothing: without a public URL there are no
// discovery documents, the 401 is the plain one, and a token is refused.
func TestOAuthOffAdvertisesNothing(t *testing.T) {
	s := newOAuthStack(t, false)
	if code, _, _ := s.do(t, http.MethodGet, oauth.WellKnownServer, "", ""); code != http.StatusNotFound {
		t.Errorf("discovery with OAuth off: %d, want 404", code)
	}
	code, ch, _ := s.do(t, http.MethodPost, "/mcp", "", "")
	if code != http.StatusUnauthorized || ch != `Bearer realm="munin"` {
		t.Errorf("401 with OAuth off: %q", ch)
	}
	if code, _, _ := s.do(t, http.MethodPost, "/mcp", s.access, ""); code != http.StatusUnauthorized {
		t.Errorf("token with OAuth off: %d, want 401", code)
	}
	if code, _, _ := s.do(t, http.MethodPost, KeyOnlyMCP, "", ""); code != http.StatusNotFound {
		t.Errorf("%s with OAuth off: %d, want 404 (only /mcp exists)", KeyOnlyMCP, code)
	}
}
