package oauth_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/oauth"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// TestRegister: a registration is 201 with the metadata the server keeps
// (RFC 7591 §3.2.1) — the name filled in when absent, repeats dropped,
// scope echoed only when sent — and the client is then known.
func TestRegister(t *testing.T) {
	e := newTokenEnv(t)
	loopback := "http://127.0.0.1/callback"
	for _, tc := range []struct {
		name, body string
		want       map[string]any // the response but client_id and client_id_issued_at
	}{
		{"VS Code style", `{"client_name":"Visual Studio Code","redirect_uris":["` + redirect + `","` + loopback + `","` + redirect + `"],
			"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none","scope":"memory"}`,
			map[string]any{"client_name": "Visual Studio Code", "redirect_uris": []any{redirect, loopback},
				"grant_types": []any{"authorization_code", "refresh_token"}, "response_types": []any{"code"},
				"token_endpoint_auth_method": "none", "scope": "memory"}},
		{"minimal", `{"redirect_uris":["` + redirect + `"]}`,
			map[string]any{"client_name": "claude.ai", "redirect_uris": []any{redirect}, "grant_types": []any{"authorization_code", "refresh_token"},
				"response_types": []any{"code"}, "token_endpoint_auth_method": "none"}},
	} {
		res, body := e.post(t, oauth.RegisterPath, "application/json; charset=utf-8", tc.body, nil)
		if res.StatusCode != http.StatusCreated {
			t.Errorf("%s: %d %s; want 201", tc.name, res.StatusCode, body)
			continue
		}
		checkHeaders(t, tc.name, res)
		var got map[string]any
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("%s: %s: %v", tc.name, body, err)
		}
		id, _ := got["client_id"].(string)
		issued, _ := got["client_id_issued_at"].(float64)
		delete(got, "client_id")
		delete(got, "client_id_issued_at")
		if id == "" || issued <= 0 || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: registered %s; want client_id, client_id_issued_at and %v", tc.name, body, tc.want)
		}
		c, err := e.env.Svc.OAuthClient(ctx, id)
		if err != nil || c.Name != tc.want["client_name"] || len(c.RedirectURIs) != len(tc.want["redirect_uris"].([]any)) {
			t.Errorf("%s: the client as stored: %+v, %v", tc.name, c, err)
		}
	}
}

// TestRegisterRefusals: each bad registration is 400 with its RFC 7591
// error name.
func TestRegisterRefusals(t *testing.T) {
	e := newTokenEnv(t)
	for _, tc := range []struct {
		name, ctype, body, want string
	}{
		{"redirect_uris missing", "application/json", `{"client_name":"x"}`, "invalid_redirect_uri"},
		{"javascript: URI", "application/json", `{"redirect_uris":["javascript:alert(1)"]}`, "invalid_redirect_uri"},
		{"confidential client", "application/json", `{"redirect_uris":["` + redirect + `"],"token_endpoint_auth_method":"client_secret_basic"}`, "invalid_client_metadata"},
		{"implicit grant", "application/json", `{"redirect_uris":["` + redirect + `"],"grant_types":["implicit"]}`, "invalid_client_metadata"},
		{"not JSON", "application/json", `redirect_uris=` + redirect, "invalid_client_metadata"},
		{"empty body", "application/json", ``, "invalid_client_metadata"},
		{"form body", "application/x-www-form-urlencoded", `{"redirect_uris":["` + redirect + `"]}`, "invalid_request"},
		{"too large", "application/json", `{"redirect_uris":["` + redirect + `"],"client_name":"` + strings.Repeat("x", oauth.MaxBodyBytes) + `"}`, "invalid_request"},
	} {
		res, body := e.post(t, oauth.RegisterPath, tc.ctype, tc.body, nil)
		if res.StatusCode != http.StatusBadRequest || oauthError(body) != tc.want {
			t.Errorf("%s: %d %s; want 400 %s", tc.name, res.StatusCode, body, tc.want)
			continue
		}
		checkHeaders(t, tc.name, res)
	}
}

// TestEndpointsMethodsAndPreflight: both paths answer a CORS preflight so
// that a browser-based client (the MCP Inspector) may POST cross-origin;
// other methods are 405 with Allow, other paths 404.
func TestEndpointsMethodsAndPreflight(t *testing.T) {
	e := newTokenEnv(t)
	for _, path := range []string{oauth.TokenPath, oauth.RegisterPath} {
		req, _ := http.NewRequest(http.MethodOptions, e.srv.URL+path, nil)
		req.Header.Set("Origin", "http://localhost:6274")
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type, mcp-protocol-version")
		res, body := e.do(t, req)
		h := res.Header
		if res.StatusCode != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != "*" ||
			h.Get("Access-Control-Allow-Methods") != "POST" || h.Get("Access-Control-Max-Age") != "600" ||
			h.Get("Access-Control-Allow-Headers") != "Content-Type, Authorization, MCP-Protocol-Version" {
			t.Errorf("preflight %s: %d %v %s", path, res.StatusCode, h, body)
		}
		for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
			req, _ := http.NewRequest(m, e.srv.URL+path, nil)
			res, body := e.do(t, req)
			if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "POST, OPTIONS" || oauthError(body) != "invalid_request" {
				t.Errorf("%s %s: %d Allow %q %s; want 405", m, path, res.StatusCode, res.Header.Get("Allow"), body)
			}
		}
	}
	for _, path := range []string{"/oauth/revoke", oauth.TokenPath + "/x", oauth.AuthorizePath, "/"} {
		if res, _ := e.post(t, path, "application/json", `{}`, nil); res.StatusCode != http.StatusNotFound {
			t.Errorf("POST %s: %d, want 404", path, res.StatusCode)
		}
	}
}

// TestEndpointsOAuthOff: without a public URL the endpoints do not exist.
func TestEndpointsOAuthOff(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	e := &tokenEnv{env: env}
	e.srv = httptestServer(t, oauth.Endpoints(oauth.Config{}, env.Svc, nil))
	for _, tc := range []struct{ method, path, ctype, body string }{
		{http.MethodPost, oauth.RegisterPath, "application/json", `{"redirect_uris":["` + redirect + `"]}`},
		{http.MethodPost, oauth.TokenPath, "application/x-www-form-urlencoded", "grant_type=refresh_token&client_id=x&refresh_token=" + memory.OAuthRefreshPrefix + "x"},
		{http.MethodOptions, oauth.TokenPath, "", ""},
		{http.MethodOptions, oauth.RegisterPath, "", ""},
	} {
		req, _ := http.NewRequest(tc.method, e.srv.URL+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", tc.ctype)
		res, body := e.do(t, req)
		if res.StatusCode != http.StatusNotFound || res.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("OAuth off: %s %s: %d %s; want 404", tc.method, tc.path, res.StatusCode, body)
		}
	}
}
