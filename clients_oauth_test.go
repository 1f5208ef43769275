//go:build clients

// OAuth sign-in (issue 25) with real clients: the official TypeScript SDK's
// OAuth client (v2 and v1) runs the whole flow against an in-process server with
// a public URL (.ci/clients/oauth_flow.mjs: discovery from the 401,
// registration by DCR and by CIMD, PKCE, the authorize page played as a
// person, the code exchange with state and iss, tool calls, a forced
// refresh), then revoking the key ends its tokens. The conformance suite's
// authorization-server scenarios are in clients_oauth_conformance_test.go.
// Node as in clients_test.go.
//
//	(cd .ci/clients && npm ci) && go test -tags clients -run TestClientsOAuth -count=1 -v .
package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"munin/internal/app"
	"munin/internal/clientmeta"
	"munin/internal/memory"
)

// oauthServer is a server with OAuth on: its public URL is its loopback
// address (oauth.ParsePublicURL allows http there), so it is the issuer.
type oauthServer struct {
	a    *app.App
	base string // the public URL, the issuer
}

// startOAuthServer listens first, so that the public URL can name the
// port, then opens the app with it and serves until the test ends. fetch
// is the CIMD fetcher's (app.Config.ClientMetadata).
func startOAuthServer(t *testing.T, fetch clientmeta.Options) *oauthServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	var cfg app.Config
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Storage.DataDir, cfg.Server.Addr, cfg.Server.PublicURL = t.TempDir(), ln.Addr().String(), base
	cfg.ClientMetadata = fetch
	a, err := app.Open(cfg)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, ln) }()
	var once sync.Once
	t.Cleanup(func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
			if err := a.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	})
	return &oauthServer{a: a, base: base}
}

// newKey mints a write key of workspace acme's project for alice: the key
// the person pastes. It returns the key and its id.
func (s *oauthServer) newKey(t *testing.T, project string) (string, int64) {
	t.Helper()
	tok, k, err := s.a.Svc.CreateKey(context.Background(), memory.ProjectRef{Workspace: "acme", Project: project}, "alice", memory.RoleWrite)
	if err != nil {
		t.Fatal(err)
	}
	return tok, k.ID
}

// cimdServer serves a Client ID Metadata Document over TLS on a loopback
// port, at the URL it returns, for redirect; the server's fetcher reaches
// it with fetchOptions. fetched counts the document's fetches.
func cimdServer(t *testing.T, redirect string) (docURL string, fetch clientmeta.Options, fetched *atomic.Int32) {
	t.Helper()
	fetched = new(atomic.Int32)
	srv := httptest.NewUnstartedServer(nil)
	docURL = "https://" + srv.Listener.Addr().String() + "/oauth/client.json"
	doc, _ := json.Marshal(map[string]any{"client_id": docURL, "client_name": "munin-ci-oauth (CIMD)", "redirect_uris": []string{redirect},
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"}, "token_endpoint_auth_method": "none"})
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/oauth/client.json" {
			http.NotFound(w, r)
			return
		}
		fetched.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=300")
		w.Write(doc)
	})
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	return docURL, clientmeta.Options{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, RootCAs: roots}, fetched
}

// oauthSummary is what oauth_flow.mjs prints when the flow went through.
type oauthSummary struct {
	SDK           string `json:"sdk"`
	Registration  string `json:"registration"`
	ClientID      string `json:"client_id"`
	ClientIDIsURL bool   `json:"client_id_is_url"`
	Authorize     struct {
		Path, Resource, Scope, Method string
	} `json:"authorize"`
	Callback struct {
		Iss   string `json:"iss"`
		State bool   `json:"state"`
		Code  bool   `json:"code"`
	} `json:"callback"`
	Token struct {
		Received bool   `json:"received"`
		Type     string `json:"type"`
		Refresh  bool   `json:"refresh"`
	} `json:"token"`
	Remember struct {
		Slug    string `json:"slug"`
		Version int    `json:"version"`
	} `json:"remember"`
	Recall         recallSummary `json:"recall"`
	AfterRefresh   recallSummary `json:"after_refresh"`
	Refreshed      bool          `json:"refreshed"`
	RefreshRotated bool          `json:"refresh_rotated"`
	Invalidated    []string      `json:"invalidated"`
}

type recallSummary struct {
	Hits []struct {
		Slug string `json:"slug"`
	} `json:"hits"`
}

// oauthTokens are the last tokens the script held (written to a file, never
// printed).
type oauthTokens struct {
	Access  string `json:"access_token"`
	Refresh string `json:"refresh_token"`
}

// TestClientsOAuth: the SDK's client (v2 and v1) signs in, once registered
// by DCR and once by CIMD, calls remember and recall with its access token,
// refreshes when the token is refused; then revoking the key the person
// signed in with ends its token, and its refresh token, at once. Each run
// signs in with a key of a project of its own.
func TestClientsOAuth(t *testing.T) {
	node := findNode(t)
	docURL, fetch, fetched := cimdServer(t, flowRedirect)
	s := startOAuthServer(t, fetch)

	for _, sdk := range []string{"v2", "v1"} {
		t.Run("SDK"+sdk[1:]+"/DCR", func(t *testing.T) {
			key, keyID := s.newKey(t, "dcr-"+sdk)
			sum, tok := s.runFlow(t, node, sdk, key, "")
			if sum.Registration != "dcr" || !strings.HasPrefix(sum.ClientID, "dcr_") || sum.ClientIDIsURL {
				t.Errorf("registration: %q, client id %q (the metadata URL: %v), want a DCR client id", sum.Registration, sum.ClientID, sum.ClientIDIsURL)
			}
			s.checkFlow(t, sdk, sum)
			s.checkRevoke(t, keyID, sum.ClientID, tok)
		})
		t.Run("SDK"+sdk[1:]+"/CIMD", func(t *testing.T) {
			key, keyID := s.newKey(t, "cimd-"+sdk)
			sum, tok := s.runFlow(t, node, sdk, key, docURL)
			if sum.Registration != "cimd" || sum.ClientID != docURL || !sum.ClientIDIsURL {
				t.Errorf("registration: %q, client id %q, want the metadata URL %s", sum.Registration, sum.ClientID, docURL)
			}
			if fetched.Load() == 0 {
				t.Error("the server never fetched the client's metadata document")
			}
			s.checkFlow(t, sdk, sum)
			s.checkRevoke(t, keyID, sum.ClientID, tok)
		})
	}
}

// flowRedirect is oauth_flow.mjs's redirect URI: never listened on, the
// script reads the Location of the consent's answer.
const flowRedirect = "http://127.0.0.1:1/callback"

// checkFlow checks what the script saw of one sign-in and its calls.
func (s *oauthServer) checkFlow(t *testing.T, sdk string, sum oauthSummary) {
	t.Helper()
	if sum.SDK != sdk {
		t.Errorf("the script ran SDK %q, want %s", sum.SDK, sdk)
	}
	if sum.Authorize.Path != "/authorize" || sum.Authorize.Resource != s.base+"/mcp" || sum.Authorize.Method != "S256" {
		t.Errorf("authorize request: %+v, want /authorize with resource %s/mcp and S256", sum.Authorize, s.base)
	}
	if sum.Callback.Iss != s.base || !sum.Callback.State || !sum.Callback.Code {
		t.Errorf("callback: %+v, want iss %s, the state sent and a code", sum.Callback, s.base)
	}
	if !sum.Token.Received || !strings.EqualFold(sum.Token.Type, "bearer") || !sum.Token.Refresh {
		t.Errorf("token response: %+v, want a bearer access token and a refresh token", sum.Token)
	}
	if sum.Remember.Slug != "oauth/ci" || sum.Remember.Version != 1 {
		t.Errorf("remember: %+v, want oauth/ci version 1", sum.Remember)
	}
	for name, r := range map[string]recallSummary{"recall": sum.Recall, "recall after the refresh": sum.AfterRefresh} {
		if len(r.Hits) == 0 || r.Hits[0].Slug != "oauth/ci" {
			t.Errorf("%s: %+v, want oauth/ci first", name, r.Hits)
		}
	}
	if !sum.Refreshed || !sum.RefreshRotated {
		t.Errorf("refreshed %v, refresh token rotated %v: the junk access token should have made the SDK refresh", sum.Refreshed, sum.RefreshRotated)
	}
}

// checkRevoke: the script's last access token works, as the key does;
// revoking the key ends it at once, and the refresh token with it.
func (s *oauthServer) checkRevoke(t *testing.T, keyID int64, clientID string, tok oauthTokens) {
	t.Helper()
	if !strings.HasPrefix(tok.Access, "munin_oat_") || !strings.HasPrefix(tok.Refresh, "munin_ort_") {
		t.Fatalf("the script's last tokens have the prefixes %.10q, %.10q", tok.Access, tok.Refresh)
	}
	if res := s.rawMCP(t, tok.Access); res.StatusCode != http.StatusOK {
		t.Fatalf("initialize with the access token: %d, want 200", res.StatusCode)
	}
	if err := s.a.Svc.RevokeKey(context.Background(), keyID); err != nil {
		t.Fatal(err)
	}
	res := s.rawMCP(t, tok.Access)
	wa := res.Header.Get("WWW-Authenticate")
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(wa, `resource_metadata="`+s.base+"/.well-known/oauth-protected-resource/mcp") {
		t.Errorf("after revoking the key: %d, WWW-Authenticate %q; want 401 naming the resource metadata", res.StatusCode, wa)
	}
	code, body := s.postForm(t, "/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.Refresh},
		"client_id": {clientID}, "resource": {s.base + "/mcp"}})
	if code != http.StatusBadRequest || !strings.Contains(body, `"invalid_grant"`) {
		t.Errorf("refresh after revoking the key: %d %s, want 400 invalid_grant", code, redactTokens(body))
	}
}

// runFlow runs oauth_flow.mjs once with SDK sdk (v1 or v2), registering by
// CIMD when cimdURL is set, and returns its summary and last tokens; it
// fails the test unless the script exits 0.
func (s *oauthServer) runFlow(t *testing.T, node nodeEnv, sdk, key, cimdURL string) (oauthSummary, oauthTokens) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), processWait)
	defer cancel()
	tokFile := filepath.Join(t.TempDir(), "tokens.json")
	args := []string{"oauth_flow.mjs", s.base + "/mcp", key, tokFile}
	if cimdURL != "" {
		args = append(args, cimdURL)
	}
	cmd := node.command(ctx, "node", args...)
	cmd.Env = append(cmd.Env, "MUNIN_OAUTH_SDK="+sdk)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var line struct {
		Summary *json.RawMessage `json:"summary"`
		Fatal   string           `json:"fatal"`
	}
	var raw []byte
	for _, l := range bytes.Split(out, []byte("\n")) {
		if json.Unmarshal(l, &line) == nil && (line.Summary != nil || line.Fatal != "") {
			raw = l
			break
		}
	}
	switch {
	case line.Fatal != "":
		t.Fatalf("oauth_flow.mjs failed (%v): %s\nstderr:\n%s", err, line.Fatal, redactTokens(stderr.String()))
	case err != nil || line.Summary == nil:
		t.Fatalf("oauth_flow.mjs: exit %v, no summary\nstdout:\n%s\nstderr:\n%s", err, redactTokens(string(out)), redactTokens(stderr.String()))
	}
	t.Logf("summary: %s", raw)
	var sum oauthSummary
	if err := json.Unmarshal(*line.Summary, &sum); err != nil {
		t.Fatalf("summary: %v: %s", err, raw)
	}
	var tok oauthTokens
	b, err := os.ReadFile(tokFile)
	if err == nil {
		err = json.Unmarshal(b, &tok)
	}
	if err != nil {
		t.Fatalf("the script's tokens: %v", err)
	}
	return sum, tok
}

// tokenRE finds Munin credentials in output that is logged.
var tokenRE = regexp.MustCompile(`munin_[A-Za-z0-9_-]+`)

// redactTokens hides keys, tokens and codes in logged output.
func redactTokens(s string) string { return tokenRE.ReplaceAllString(s, "munin_…") }

// rawMCP sends an initialize to /mcp with token as bearer.
func (s *oauthServer) rawMCP(t *testing.T, token string) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"munin-ci-raw","version":"1.0.0"}}}`
	req, _ := http.NewRequest(http.MethodPost, s.base+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

// postForm posts form to path and returns the status and body.
func (s *oauthServer) postForm(t *testing.T, path string, form url.Values) (int, string) {
	t.Helper()
	res, err := http.PostForm(s.base+path, form)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}
