package web

import (
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestInfoKeysNewKeySetup: creating a key shows, on that response only,
// the key with a copy button and a ready-to-paste client configuration for
// this server (the Claude Code command and an mcpServers block) holding it.
func TestInfoKeysNewKeySetup(t *testing.T) {
	u := newUI(t)
	b := u.signIn(t, u.admin)
	code, body := b.post("/keys", url.Values{"workspace": {ws}, "project": {proj}, "agent": {"ci-bot"}, "role": {"read"}})
	if code != http.StatusOK {
		t.Fatalf("create key: %d %s", code, errorText(body))
	}
	m := regexpToken.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no key on the page:\n%s", body)
	}
	token, mcpURL := m[1], u.srv.URL+"/mcp"
	for _, want := range []string{`id="copy-token" data-copy="token" hidden>Copy key</button>`, `data-copy="setup-command"`, `data-copy="setup-json"`, `id="copy-status" role="status"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the new key's section lacks %s", want)
		}
	}
	text := html.UnescapeString(body)
	if want := `<code id="setup-command">claude mcp add --transport http munin ` + mcpURL + ` --header "Authorization: Bearer ` + token + `"</code>`; !strings.Contains(text, want) {
		t.Errorf("no Claude Code command %s", want)
	}
	_, rest, _ := strings.Cut(text, `<code id="setup-json">`)
	block, _, _ := strings.Cut(rest, "</code>")
	var cfg struct {
		MCPServers map[string]struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(block), &cfg); err != nil {
		t.Fatalf("the mcpServers block is no JSON: %v\n%s", err, block)
	}
	if s := cfg.MCPServers["munin"]; s.Type != "http" || s.URL != mcpURL || s.Headers["Authorization"] != "Bearer "+token {
		t.Errorf("mcpServers block %+v, want munin over http at %s with the new key", cfg.MCPServers, mcpURL)
	}
	// Shown once: the keys page after it has neither key nor configuration.
	if _, body = b.get("/keys"); strings.Contains(body, token) || strings.Contains(body, "setup-command") {
		t.Error("the keys page shows the key again")
	}
}

// TestInfoKeysSessionKeyMarked: the keys the session signed in with are
// marked "this session" and have no revoke button; the other keys have one.
// The service still revokes it when asked (this is the page, not a rule).
func TestInfoKeysSessionKeyMarked(t *testing.T) {
	u := newUI(t)
	b := u.signIn(t, u.admin)
	_, body := b.get("/keys")
	own, other := u.adminKey.ID, u.writerKey.ID
	if !strings.Contains(body, `<span class="mark session" id="session-key-`+itoa(own)+`"`) || !strings.Contains(body, ">this session</span>") {
		t.Errorf("the session's key %d is not marked", own)
	}
	if strings.Contains(body, `action="/keys/`+itoa(own)+`/revoke"`) {
		t.Errorf("the session's key %d has a revoke button", own)
	}
	if !strings.Contains(body, `action="/keys/`+itoa(other)+`/revoke"`) || strings.Contains(body, `id="session-key-`+itoa(other)+`"`) {
		t.Errorf("key %d of another agent: no revoke button, or marked as the session's", other)
	}
	if !strings.Contains(body, `id="session-keys-hint"`) {
		t.Error("the page does not say why the session's key has no revoke button")
	}
	if code, _ := b.post("/keys/"+itoa(own)+"/revoke", nil); code != http.StatusSeeOther {
		t.Errorf("revoking the session's own key by a post: %d, want 303 as before", code)
	}
}
