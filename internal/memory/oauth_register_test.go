package memory

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestParseClientRegistrationAccepts(t *testing.T) {
	both := []string{OAuthGrantAuthorizationCode, OAuthGrantRefreshToken}
	code := []string{OAuthGrantAuthorizationCode}
	for _, tc := range []struct {
		body string
		want ClientRegistration
	}{
		{ // claude.ai
			`{"client_name":"Claude","redirect_uris":["https://claude.ai/api/mcp/auth_callback"],"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none","scope":"memory"}`,
			ClientRegistration{"Claude", []string{"https://claude.ai/api/mcp/auth_callback"}, both, []string{"memory"}},
		},
		{ // Cursor's three redirect URIs in one request
			`{"client_name":"Cursor","redirect_uris":["cursor://anysphere.cursor-mcp/oauth/callback","https://www.cursor.com/agents/mcp/oauth/callback","http://localhost:8787/callback"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"response_types":["code"]}`,
			ClientRegistration{"Cursor", []string{"cursor://anysphere.cursor-mcp/oauth/callback", "https://www.cursor.com/agents/mcp/oauth/callback", "http://localhost:8787/callback"}, both, []string{}},
		},
		{ // the TypeScript SDK's shape, with members Munin ignores
			`{"client_name":"MCP CLI","redirect_uris":["http://localhost:3000/callback"],"grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none","client_uri":"https://example.com","logo_uri":"https://example.com/l.png","software_id":"x","software_version":"1","contacts":["a@example.com"],"jwks":{"keys":[]},"application_type":"native","scope":"memory offline_access"}`,
			ClientRegistration{"MCP CLI", []string{"http://localhost:3000/callback"}, both, []string{"memory", "offline_access"}},
		},
		{ // VS Code (microsoft/vscode#278512)
			`{"client_name":"Visual Studio Code","redirect_uris":["https://insiders.vscode.dev/redirect","https://vscode.dev/redirect","http://127.0.0.1/","http://127.0.0.1:33418/"],"grant_types":["authorization_code","refresh_token"],"token_endpoint_auth_method":"none"}`,
			ClientRegistration{"Visual Studio Code", []string{"https://insiders.vscode.dev/redirect", "https://vscode.dev/redirect", "http://127.0.0.1/", "http://127.0.0.1:33418/"}, both, []string{}},
		},
		{ // minimal: the name from the host, authorization_code only (RFC 7591 §2)
			`{"redirect_uris":["https://chatgpt.com/connector_platform_oauth_redirect"]}`,
			ClientRegistration{"chatgpt.com", []string{"https://chatgpt.com/connector_platform_oauth_redirect"}, code, []string{}},
		},
		{ // null is absent
			`{"redirect_uris":["http://127.0.0.1:33418/cb"],"client_name":null,"grant_types":null,"response_types":null,"scope":null,"token_endpoint_auth_method":null}`,
			ClientRegistration{"127.0.0.1", []string{"http://127.0.0.1:33418/cb"}, code, []string{}},
		},
		{ // repeats dropped, grant types in one order
			` {"redirect_uris":["https://a.example/cb","https://a.example/cb","http://[::1]/cb"],"grant_types":["refresh_token","authorization_code","authorization_code"],"application_type":"web","client_name":"  A  "} `,
			ClientRegistration{"A", []string{"https://a.example/cb", "http://[::1]/cb"}, both, []string{}},
		},
		{
			`{"redirect_uris":["com.example.app:/cb"],"client_name":"` + strings.Repeat("ä", OAuthMaxClientName) + `"}`,
			ClientRegistration{strings.Repeat("ä", OAuthMaxClientName), []string{"com.example.app:/cb"}, code, []string{}},
		},
		{`{"redirect_uris":["com.example.app:/cb"]}`, ClientRegistration{"com.example.app", []string{"com.example.app:/cb"}, code, []string{}}},
		{`{"redirect_uris":["http://[::1]:9/cb"],"client_name":""}`, ClientRegistration{"[::1]", []string{"http://[::1]:9/cb"}, code, []string{}}},
		{`{"redirect_uris":["HTTPS://Claude.AI:443/cb"]}`, ClientRegistration{"claude.ai", []string{"HTTPS://Claude.AI:443/cb"}, code, []string{}}},
	} {
		got, err := ParseClientRegistration([]byte(tc.body))
		if err != nil {
			t.Errorf("ParseClientRegistration(%s) = %v", tc.body, err)
			continue
		}
		if got.Name != tc.want.Name || !slices.Equal(got.RedirectURIs, tc.want.RedirectURIs) ||
			!slices.Equal(got.GrantTypes, tc.want.GrantTypes) || got.Scope == nil || !slices.Equal(got.Scope, tc.want.Scope) {
			t.Errorf("ParseClientRegistration(%s)\n got %#v\nwant %#v", tc.body, got, tc.want)
		}
	}
}

func TestParseClientRegistrationRefuses(t *testing.T) {
	const uri = `"redirect_uris":["https://a.example/cb"]`
	var seventeen []string
	for i := range OAuthMaxRedirectURIs + 1 {
		seventeen = append(seventeen, fmt.Sprintf(`"https://a.example/%d"`, i))
	}
	meta, redir := OAuthInvalidClientMetadata, OAuthInvalidRedirectURI
	for _, tc := range []struct {
		body string
		want OAuthError
		says string
	}{
		{``, meta, ""},
		{`null`, meta, "one JSON object"},
		{`[]`, meta, "one JSON object"},
		{`"x"`, meta, "one JSON object"},
		{`{`, meta, ""},
		{`{` + uri + `} x`, meta, ""},
		{`{` + uri + `}{}`, meta, ""},
		{"{\"client_name\":\"\xff\"," + uri + "}", meta, "UTF-8"},
		{`{` + uri + `,` + uri + `}`, meta, "duplicate"},
		{`{"Redirect_URIs":["https://a.example/cb"]}`, redir, "redirect_uris"}, // names match exactly
		{`{}`, redir, "redirect_uris"},
		{`{"redirect_uris":null}`, redir, "redirect_uris"},
		{`{"redirect_uris":[]}`, redir, "redirect_uris"},
		{`{"redirect_uris":[` + strings.Join(seventeen, ",") + `]}`, redir, "1-16"},
		{`{"redirect_uris":"https://a.example/cb"}`, meta, "array of strings"},
		{`{"redirect_uris":[1]}`, meta, "array of strings"},
		{`{"redirect_uris":[null]}`, redir, "empty"},
		{`{"redirect_uris":["javascript:alert(1)"]}`, redir, "javascript"},
		{`{"redirect_uris":["https://a.example/cb","http://evil.example/cb"]}`, redir, "loopback"},
		{`{"redirect_uris":["https://a.example/cb#x"]}`, redir, "fragment"},
		{`{` + uri + `,"token_endpoint_auth_method":"client_secret_basic"}`, meta, "public clients only"},
		{`{` + uri + `,"token_endpoint_auth_method":"client_secret_post"}`, meta, "public clients only"},
		{`{` + uri + `,"token_endpoint_auth_method":"private_key_jwt"}`, meta, "public clients only"},
		{`{` + uri + `,"grant_types":["client_credentials"]}`, meta, "not supported"},
		{`{` + uri + `,"grant_types":["authorization_code","implicit"]}`, meta, "not supported"},
		{`{` + uri + `,"grant_types":["password"]}`, meta, "not supported"},
		{`{` + uri + `,"grant_types":["refresh_token"]}`, meta, "include authorization_code"},
		{`{` + uri + `,"grant_types":[]}`, meta, "include authorization_code"},
		{`{` + uri + `,"grant_types":"authorization_code"}`, meta, "array of strings"},
		{`{` + uri + `,"response_types":["token"]}`, meta, "response_types"},
		{`{` + uri + `,"response_types":["code","token"]}`, meta, "response_types"},
		{`{` + uri + `,"response_types":["code id_token"]}`, meta, "response_types"},
		{`{` + uri + `,"response_types":[]}`, meta, "response_types"},
		{`{` + uri + `,"application_type":"desktop"}`, meta, "application_type"},
		{`{` + uri + `,"scope":"mem\"ory"}`, meta, "scope"},
		{`{` + uri + `,"scope":["memory"]}`, meta, "must be a string"},
		{`{` + uri + `,"client_name":5}`, meta, "must be a string"},
		{`{` + uri + `,"client_name":"Cl\u0000aude"}`, meta, "U+0000"},
		{`{` + uri + `,"client_name":"Claude\nEvil"}`, meta, "U+000A"},
		{`{` + uri + `,"client_name":"Claude\u202e"}`, meta, "U+202E"},
		{`{` + uri + `,"client_name":"` + strings.Repeat("ä", OAuthMaxClientName+1) + `"}`, meta, "limit"},
	} {
		got, err := ParseClientRegistration([]byte(tc.body))
		call := fmt.Sprintf("ParseClientRegistration(%s)", clip(tc.body, 120))
		checkOAuthErr(t, call, err, false, tc.want)
		if err == nil {
			t.Errorf("%s accepted: %#v", call, got)
		} else if !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s = %v, want it to say %q", call, err, tc.says)
		}
	}
}
