package clientmeta

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"munin/internal/memory"
)

// A good document becomes a CIMD client: the URL as its id, the name and
// redirect URIs of the document.
func TestGoodDocument(t *testing.T) {
	s := newDocServer(t)
	clock := newClock()
	id := s.URL + "/oauth/client.json"
	doc := goodDoc(id)
	doc["grant_types"] = []string{"authorization_code", "refresh_token"}
	doc["token_endpoint_auth_method"] = "none"
	doc["logo_uri"] = "https://app.example.com/logo.png" // unknown members are ignored
	s.serveDoc("/oauth/client.json", doc, "Content-Type: application/json; charset=utf-8")

	f := s.fetcher(clock, Options{})
	got, err := f.Client(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	want := memory.OAuthClient{ID: id, Kind: memory.OAuthClientCIMD, Name: "Test Client",
		RedirectURIs: []string{"https://app.example.com/callback", "http://127.0.0.1/callback"},
		CreatedAt:    clock.Now()}
	if got.ID != want.ID || got.Kind != want.Kind || got.Name != want.Name ||
		!slices.Equal(got.RedirectURIs, want.RedirectURIs) || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Fatalf("client %+v, want %+v", got, want)
	}
	// What a caller does to its copy does not reach the cache.
	got.RedirectURIs[0] = "https://evil.example/"
	again, err := f.Client(context.Background(), id)
	if err != nil || again.RedirectURIs[0] != "https://app.example.com/callback" {
		t.Fatalf("second answer %+v, %v: the cached client was changed through a returned slice", again, err)
	}
}

// Each document rule refuses, naming the rule. A case either changes the
// good document (edit) or replaces the body (raw, %s being the URL).
func TestDocumentRules(t *testing.T) {
	s := newDocServer(t)
	f := s.fetcher(newClock(), Options{})
	del := func(k string) func(map[string]any) { return func(d map[string]any) { delete(d, k) } }
	set := func(k string, v any) func(map[string]any) { return func(d map[string]any) { d[k] = v } }
	uris := func(u ...any) func(map[string]any) { return set("redirect_uris", u) }
	many := make([]any, MaxRedirectURIs+1)
	for i := range many {
		many[i] = fmt.Sprintf("https://app.example.com/cb%d", i)
	}
	cases := []struct {
		name string
		edit func(map[string]any)
		raw  string
		rule string
	}{
		{name: "client_id missing", edit: del("client_id"), rule: "client_id equal to the URL"},
		{name: "client_id other", edit: set("client_id", "https://other.example/client.json"), rule: "client_id equal to the URL"},
		{name: "client_id not a string", edit: set("client_id", 7), rule: "client_id equal to the URL"},
		{name: "client_name missing", edit: del("client_name"), rule: "must have a client_name"},
		{name: "client_name null", edit: set("client_name", nil), rule: "must have a client_name"},
		{name: "client_name empty", edit: set("client_name", "  "), rule: "client_name must not be empty"},
		{name: "client_name long", edit: set("client_name", strings.Repeat("ä", MaxNameLength+1)), rule: "at most 200 characters"},
		{name: "client_name control", edit: set("client_name", "Claude\nApprove"), rule: "control characters"},
		{name: "client_name bidi", edit: set("client_name", "Cla\u202Eude"), rule: "control characters"},
		{name: "redirect_uris missing", edit: del("redirect_uris"), rule: "must have redirect_uris"},
		{name: "redirect_uris string", edit: set("redirect_uris", "https://app.example.com/cb"), rule: "must have redirect_uris"},
		{name: "redirect_uris number in array", edit: uris("https://app.example.com/cb", 3), rule: "must have redirect_uris"},
		{name: "redirect_uris empty", edit: set("redirect_uris", []any{}), rule: "redirect_uris must not be empty"},
		{name: "redirect_uris too many", edit: set("redirect_uris", many), rule: "at most 16 redirect_uris"},
		{name: "redirect relative", edit: uris("/callback"), rule: "redirect_uris[0] must be an absolute URI"},
		{name: "redirect empty", edit: uris("https://app.example.com/cb", ""), rule: "redirect_uris[1] must be 1 to 2048 bytes"},
		{name: "redirect fragment", edit: uris("https://app.example.com/cb#x"), rule: "must not contain a fragment"},
		{name: "redirect userinfo", edit: uris("https://u@app.example.com/cb"), rule: "must not contain userinfo"},
		{name: "redirect https no host", edit: uris("https:/cb"), rule: "https URL with a host"},
		{name: "redirect http public", edit: uris("http://app.example.com/cb"), rule: "http only on a loopback host"},
		{name: "redirect http lookalike", edit: uris("http://localhost.evil.example/cb"), rule: "http only on a loopback host"},
		{name: "redirect http private", edit: uris("http://10.0.0.1/cb"), rule: "http only on a loopback host"},
		{name: "redirect javascript", edit: uris("javascript:alert(1)"), rule: "private-use scheme of reverse-domain form"},
		{name: "redirect data", edit: uris("data:text/html,x"), rule: "private-use scheme of reverse-domain form"},
		{name: "redirect one-word scheme", edit: uris("myapp:/callback"), rule: "private-use scheme of reverse-domain form"},
		{name: "client_secret", edit: set("client_secret", "s3cret"), rule: "must not contain client_secret"},
		{name: "client_secret null", edit: set("client_secret", nil), rule: "must not contain client_secret"},
		{name: "client_secret_expires_at", edit: set("client_secret_expires_at", 0), rule: "must not contain client_secret_expires_at"},
		{name: "auth basic", edit: set("token_endpoint_auth_method", "client_secret_basic"), rule: `token_endpoint_auth_method must be "none"`},
		{name: "auth post", edit: set("token_endpoint_auth_method", "client_secret_post"), rule: `token_endpoint_auth_method must be "none"`},
		{name: "auth jwt", edit: set("token_endpoint_auth_method", "client_secret_jwt"), rule: `token_endpoint_auth_method must be "none"`},
		{name: "auth not string", edit: set("token_endpoint_auth_method", nil), rule: `token_endpoint_auth_method must be "none"`},
		{name: "grant_types without code", edit: set("grant_types", []string{"client_credentials"}), rule: `containing "authorization_code"`},
		{name: "grant_types string", edit: set("grant_types", "authorization_code"), rule: `containing "authorization_code"`},
		{name: "array", raw: `[{"client_id":"%s"}]`, rule: "must be a JSON object"},
		{name: "null", raw: `null`, rule: "must be a JSON object"},
		{name: "broken JSON", raw: `{"client_id":"%s",`, rule: "must be a JSON object"},
		{name: "empty", raw: ``, rule: "must be a JSON object"},
		{name: "duplicate member", raw: `{"client_id":"%[1]s","client_name":"A","redirect_uris":["https://a.example/cb"],"client_id":"%[1]s"}`, rule: "must not name a member twice"},
		{name: "trailing data", raw: `{"client_id":"%s","client_name":"A","redirect_uris":["https://a.example/cb"]} {}`, rule: "nothing after its JSON object"},
	}
	for i, c := range cases {
		path := fmt.Sprintf("/case/%d", i)
		id := s.URL + path
		if c.raw != "" || c.edit == nil {
			body := c.raw
			if strings.Contains(body, "%") {
				body = fmt.Sprintf(c.raw, id)
			}
			s.serveRaw(path, "application/json", body)
		} else {
			doc := goodDoc(id)
			c.edit(doc)
			s.serveDoc(path, doc)
		}
		_, err := f.Client(context.Background(), id)
		if err == nil {
			t.Errorf("%s: accepted, want refused naming %q", c.name, c.rule)
			continue
		}
		if memory.ErrorCode(err) != memory.CodeInvalid || !strings.Contains(err.Error(), c.rule) {
			t.Errorf("%s: error %q, want code invalid naming %q", c.name, err, c.rule)
		}
		if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "Approve") {
			t.Errorf("%s: error %q quotes the document", c.name, err)
		}
	}
}

// The redirect URI forms that are allowed, each accepted.
func TestDocumentRedirectForms(t *testing.T) {
	s := newDocServer(t)
	f := s.fetcher(newClock(), Options{})
	for i, u := range []string{
		"https://app.example.com/callback",
		"https://app.example.com:8443/cb?x=1",
		"http://127.0.0.1/callback",
		"http://127.0.0.1:53682/callback",
		"http://[::1]:8080/cb",
		"http://localhost:3000/oauth/callback",
		"http://LOCALHOST/cb",
		"com.example.app:/callback",
		"com.example.app://callback",
		"dev.munin-tools.cli:/oauth",
	} {
		path := fmt.Sprintf("/form/%d", i)
		doc := goodDoc(s.URL + path)
		doc["redirect_uris"] = []string{u}
		s.serveDoc(path, doc)
		if _, err := f.Client(context.Background(), s.URL+path); err != nil {
			t.Errorf("%q: %v, want accepted", u, err)
		}
	}
	// Exactly the bounds: 16 redirect URIs, a 200-character name.
	doc := goodDoc(s.URL + "/bounds")
	doc["client_name"] = strings.Repeat("ä", MaxNameLength)
	bound := make([]string, MaxRedirectURIs)
	for i := range bound {
		bound[i] = fmt.Sprintf("https://app.example.com/cb%d", i)
	}
	doc["redirect_uris"] = bound
	s.serveDoc("/bounds", doc)
	if _, err := f.Client(context.Background(), s.URL+"/bounds"); err != nil {
		t.Errorf("document at the bounds: %v, want accepted", err)
	}
}
