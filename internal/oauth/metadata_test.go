package oauth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

func TestParsePublicURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://munin.example.com", "https://munin.example.com"},
		{"https://munin.example.com/", "https://munin.example.com"},
		{"HTTPS://Munin.Example.COM", "https://munin.example.com"},
		{"https://munin.example.com:8443", "https://munin.example.com:8443"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"http://localhost:8080/", "http://localhost:8080"},
	} {
		if got, err := ParsePublicURL(tc.in); err != nil || got != tc.want {
			t.Errorf("ParsePublicURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{
		"", "munin.example.com", "ftp://munin.example.com", "http://munin.example.com",
		"https://munin.example.com/munin", "https://munin.example.com?x=1", "https://munin.example.com#f",
		"https://user@munin.example.com", "https://", "http://127.0.0.1.evil.example",
	} {
		if got, err := ParsePublicURL(in); err == nil {
			t.Errorf("ParsePublicURL(%q) = %q; want an error", in, got)
		}
	}
}

// get fetches path from h and decodes the JSON object it answers.
func get(t *testing.T, h http.Handler, path string) map[string]any {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET %s: Content-Type %q", path, ct)
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return m
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestDiscoveryDocuments: what the MCP authorization specification and
// the TypeScript SDK read from the documents — the issuer spelled exactly
// as the resource names it, S256, code, both grants, "none" first, CIMD
// and iss advertised, each resource at its path, and no
// offline_access in the resource's scopes; nothing at the root.
func TestDiscoveryDocuments(t *testing.T) {
	c := Config{PublicURL: "https://munin.example.com"}
	h := Discovery(c, Resource{Path: "/mcp", Name: "Munin MCP"}, Resource{Path: "/api/v1", Name: "Munin REST"})

	as := get(t, h, WellKnownServer)
	if as["issuer"] != c.PublicURL {
		t.Errorf("issuer %v, want %s", as["issuer"], c.PublicURL)
	}
	for field, want := range map[string]string{
		"authorization_endpoint": c.PublicURL + "/authorize",
		"token_endpoint":         c.PublicURL + "/token",
		"registration_endpoint":  c.PublicURL + "/register",
	} {
		if as[field] != want {
			t.Errorf("%s = %v, want %s", field, as[field], want)
		}
	}
	if got := strs(as["code_challenge_methods_supported"]); !slices.Equal(got, []string{"S256"}) {
		t.Errorf("code_challenge_methods_supported %v, want only S256", got)
	}
	if got := strs(as["response_types_supported"]); !slices.Equal(got, []string{"code"}) {
		t.Errorf("response_types_supported %v", got)
	}
	if got := strs(as["grant_types_supported"]); !slices.Equal(got, []string{"authorization_code", "refresh_token"}) {
		t.Errorf("grant_types_supported %v", got)
	}
	if got := strs(as["token_endpoint_auth_methods_supported"]); !slices.Equal(got, []string{"none"}) {
		t.Errorf("token_endpoint_auth_methods_supported %v, want [none]: public clients only", got)
	}
	if as["client_id_metadata_document_supported"] != true || as["authorization_response_iss_parameter_supported"] != true {
		t.Errorf("CIMD %v, iss %v; want both true", as["client_id_metadata_document_supported"], as["authorization_response_iss_parameter_supported"])
	}

	for path, resource := range map[string]string{
		WellKnownResource + "/mcp":    c.PublicURL + "/mcp",
		WellKnownResource + "/api/v1": c.PublicURL + "/api/v1",
	} {
		prm := get(t, h, path)
		if prm["resource"] != resource {
			t.Errorf("%s: resource %v, want %s", path, prm["resource"], resource)
		}
		if got := strs(prm["authorization_servers"]); !slices.Equal(got, []string{as["issuer"].(string)}) {
			t.Errorf("%s: authorization_servers %v, want the issuer", path, got)
		}
		if got := strs(prm["scopes_supported"]); slices.Contains(got, ScopeOfflineAccess) || !slices.Contains(got, ScopeMemory) {
			t.Errorf("%s: scopes_supported %v, want memory and no offline_access", path, got)
		}
	}

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, WellKnownServer, strings.NewReader("{}")))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST %s: %d, want 405", WellKnownServer, rec.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, WellKnownResource, nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("root resource metadata: %d, want 404 (it would name /mcp to key-only clients)", rec.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/openid-configuration", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("openid-configuration: %d, want 404 (Munin is no OpenID provider)", rec.Code)
	}
}

func TestChallenge(t *testing.T) {
	c := Config{PublicURL: "https://munin.example.com"}
	want := `Bearer resource_metadata="https://munin.example.com/.well-known/oauth-protected-resource/mcp", scope="memory"`
	if got := c.Challenge("/mcp", false); got != want {
		t.Errorf("no token: %s\nwant %s", got, want)
	}
	if got := c.Challenge("/mcp", true); got != want+`, error="invalid_token"` {
		t.Errorf("refused token: %s", got)
	}
}
