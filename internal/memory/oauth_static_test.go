package memory

import (
	"strings"
	"testing"
)

func TestParseStaticClients(t *testing.T) {
	got, err := ParseStaticClients([]byte(`[
		{"client_id":"chatgpt-team","client_name":"ChatGPT","redirect_uris":["https://chatgpt.com/connector_platform_oauth_redirect"]},
		{"client_id":"desk.app","redirect_uris":["http://127.0.0.1/callback"],"grant_types":["authorization_code","refresh_token"]}]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "chatgpt-team" || got[0].Name != "ChatGPT" || got[0].Kind != OAuthClientStatic ||
		got[1].Name != "127.0.0.1" || got[1].RedirectURIs[0] != "http://127.0.0.1/callback" {
		t.Fatalf("got %+v", got)
	}
	for _, tc := range []struct{ in, want string }{
		{`{}`, "JSON array"},
		{`[{"client_name":"x","redirect_uris":["https://a.example/cb"]}]`, "client 1: client_id"},
		{`[{"client_id":"https://a.example/meta","redirect_uris":["https://a.example/cb"]}]`, "client_id must be"},
		{`[{"client_id":"munin_x","redirect_uris":["https://a.example/cb"]}]`, "client_id must be"},
		{`[{"client_id":"a","redirect_uris":["https://a.example/cb"]},{"client_id":"a","redirect_uris":["https://a.example/cb"]}]`, "named twice"},
		{`[{"client_id":"a","client_secret":"s","redirect_uris":["https://a.example/cb"]}]`, "client_secret"},
		{`[{"client_id":"a","redirect_uris":["javascript:alert(1)"]}]`, "client 1 (a)"},
		{`[{"client_id":"a","redirect_uris":[]}]`, "redirect_uris"},
		{`[{"client_id":"a","client_id":"b","redirect_uris":["https://a.example/cb"]}]`, "OAuth clients file"},
	} {
		if _, err := ParseStaticClients([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error mentioning %q", tc.in, err, tc.want)
		}
	}
}
