package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"munin/internal/config"
)

// serverAdminRefusal is what every memory call answers a server-admin key.
const serverAdminRefusal = "a server-admin key administers the server; use a project key for memory tools"

// TestFirstStartPrintsBothKeys: the first start of an empty data directory
// prints a server-admin key (which reads /metrics and no memory) and an
// admin key of default/default in the client configuration (which uses the
// memory tools); a second start prints nothing.
func TestFirstStartPrintsBothKeys(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(Config{IndexPersistNap: testPersistNap, Config: config.Config{Server: config.Server{Addr: "127.0.0.1:0"}, Storage: config.Storage{DataDir: dir}}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln := listen(t)
	base := "http://" + ln.Addr().String()
	var out bytes.Buffer
	if err := a.Welcome(context.Background(), &out, base); err != nil {
		t.Fatal(err)
	}
	serve(t, a, ln)

	text := out.String()
	// The first key line is the project key (scripts such as the crash test
	// take it); the server-admin key follows its own heading.
	first := regexp.MustCompile(`(?m)^\s+(munin_[A-Za-z0-9_-]{43})\s*$`).FindStringSubmatch(text)
	srv := regexp.MustCompile(`Server-admin key[^\n]*\n[^\n]*\n\s*\n\s+(munin_[A-Za-z0-9_-]{43})`).FindStringSubmatch(text)
	// The client configuration stays one key (issue 9): Bearer and the key, then the quote.
	conf := regexp.MustCompile(`claude mcp add .*Bearer (munin_[A-Za-z0-9_-]{43})["']`).FindStringSubmatch(text)
	if first == nil || srv == nil || conf == nil || conf[1] != first[1] || srv[1] == first[1] {
		t.Fatalf("want the project key first and in the client configuration, and a separate server-admin key:\n%s", text)
	}
	project, server := first[1], srv[1]
	if n := strings.Count(text, server); n != 1 {
		t.Errorf("the server-admin key is printed %d times, want once (never in a client configuration)", n)
	}

	if status, body := scrape(t, base, server); status != http.StatusOK {
		t.Errorf("metrics with the printed server-admin key: %d %s", status, body)
	}
	if status, _ := scrape(t, base, project); status != http.StatusForbidden {
		t.Errorf("metrics with the printed project key: %d, want 403", status)
	}
	c := connect(t, base, project)
	if text, isErr := call(t, c, "remember", map[string]any{"slug": "hello", "content": "first memory"}, nil); isErr {
		t.Errorf("remember with the printed project key: %s", text)
	}

	var again bytes.Buffer
	if err := a.Welcome(context.Background(), &again, base); err != nil || again.Len() != 0 {
		t.Errorf("second start printed %q (%v), want nothing", again.String(), err)
	}
}

// TestServerAdminKeyReadsNoMemory: MCP tools and REST routes refuse a
// server-admin key with one clear message, and it writes nothing.
func TestServerAdminKeyReadsNoMemory(t *testing.T) {
	a, base, project := startServer(t)
	call(t, connect(t, base, project), "remember", map[string]any{"slug": "secret", "content": "only default/default reads this"}, nil)
	server, _, err := a.Svc.CreateServerAdminKey(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}

	c := connect(t, base, server)
	for tool, args := range map[string]map[string]any{
		"remember": {"slug": "secret", "content": "ops was here"},
		"recall":   {"query": "secret"},
		"get":      {"slug": "secret"},
		"list":     {},
		"history":  {"slug": "secret"},
		"forget":   {"slug": "secret"},
	} {
		if text, isErr := call(t, c, tool, args, nil); !isErr || text != "forbidden: "+serverAdminRefusal {
			t.Errorf("MCP %s with a server-admin key: %q, want forbidden: %s", tool, text, serverAdminRefusal)
		}
	}

	for _, r := range []struct{ method, path, body string }{
		{"POST", "/api/v1/entries", `{"slug":"secret","content":"ops was here"}`},
		{"GET", "/api/v1/entries", ""},
		{"GET", "/api/v1/entries/secret", ""},
		{"DELETE", "/api/v1/entries/secret", ""},
		{"GET", "/api/v1/history/secret", ""},
		{"GET", "/api/v1/recall?q=secret", ""},
		{"POST", "/api/v1/recall", `{"query":"secret"}`},
		{"PUT", "/api/v1/project/budget", `{"writes_per_hour":5}`},
	} {
		req, _ := http.NewRequest(r.method, base+r.path, strings.NewReader(r.body))
		req.Header.Set("Authorization", "Bearer "+server)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct{ Code, Message string }
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || body.Error.Code != "forbidden" || !strings.Contains(body.Error.Message, "server-admin key") {
			t.Errorf("REST %s %s with a server-admin key: %d %+v, want 403 forbidden", r.method, r.path, resp.StatusCode, body.Error)
		}
	}

	var got struct {
		Version int `json:"version"`
	}
	if text, isErr := call(t, connect(t, base, project), "get", map[string]any{"slug": "secret"}, &got); isErr || got.Version != 1 {
		t.Errorf("the entry after the server admin's attempts: %s, version %d; want version 1", text, got.Version)
	}
}
