package mcpserver

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
)

// refusedAs checks that a is a JSON-RPC error with the status and a message
// starting with Munin's error code.
func refusedAs(t testing.TB, what string, a answer, status int, code string) {
	t.Helper()
	var e struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if a.code != status || json.Unmarshal([]byte(a.body), &e) != nil || !strings.HasPrefix(e.Error.Message, code+": ") {
		t.Fatalf("%s: %d %.300q, want %d with a JSON-RPC error %q", what, a.code, a.body, status, code+": …")
	}
}

func randomHex(n int) string {
	b := make([]byte, (n+1)/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

// TestInventedSessionIDsAreRefused: 3,000 requests with session ids Munin
// never issued — well-formed, malformed and 60 KB long, mostly GET (which
// mcp-go would keep as a stream and remember for the idle TTL) — all get 404
// and leave nothing behind, neither in Munin's manager nor in mcp-go.
func TestInventedSessionIDsAreRefused(t *testing.T) {
	h := newSessHarness(t, Options{})
	own := h.open(t, h.tokA)
	open, held := h.srv.OpenSessions(), mcpgoSessions(t, h.srv)

	const requests, workers = 3000, 4
	var wg sync.WaitGroup
	var mu sync.Mutex
	var wrong []string
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < requests; i += workers {
				var id string
				switch i % 3 {
				case 0:
					id = sessionPrefix + randomHex(60<<10)
				case 1:
					id = sessionPrefix + randomHex(32)
				default:
					id = fmt.Sprintf("not-a-session-%d", i)
				}
				method, body := http.MethodGet, ""
				switch i % 10 {
				case 3:
					method, body = http.MethodPost, listBody
				case 7:
					method = http.MethodDelete
				}
				a := h.send(t, method, h.tokB, id, body)
				if a.code != http.StatusNotFound || !strings.Contains(a.body, `"not_found: `) {
					mu.Lock()
					wrong = append(wrong, fmt.Sprintf("%s with id %.20s…: %d %.80q", method, id, a.code, a.body))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(wrong) > 0 {
		t.Errorf("%d of %d requests with invented ids were not refused with 404, e.g. %v", len(wrong), requests, wrong[:min(3, len(wrong))])
	}
	if n := h.srv.OpenSessions(); n != open {
		t.Errorf("open sessions %d after the invented ids, want %d", n, open)
	}
	if live, keys, projects, pending := h.srv.ids.size(); live != 1 || keys != 1 || projects != 1 || pending != 0 {
		t.Errorf("manager holds %d live sessions, %d keys, %d projects, %d tickets; want 1, 1, 1, 0", live, keys, projects, pending)
	}
	if n := mcpgoSessions(t, h.srv); n != held {
		t.Errorf("mcp-go holds %d per-session entries after the invented ids, want %d", n, held)
	}
	if a := h.send(t, http.MethodPost, h.tokA, own, listBody); a.code != http.StatusOK {
		t.Fatalf("the real session stopped working: %d %s", a.code, a.body)
	}
}

// TestStreamWithoutSessionIsRefused: a GET or DELETE without Mcp-Session-Id
// is 400 (mcp-go would mint a session for the GET that nobody can use).
func TestStreamWithoutSessionIsRefused(t *testing.T) {
	h := newSessHarness(t, Options{})
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		refusedAs(t, method+" without a session", h.send(t, method, h.tokA, "", ""), http.StatusBadRequest, "invalid")
	}
	if n, held := h.srv.OpenSessions(), mcpgoSessions(t, h.srv); n != 0 || held != 0 {
		t.Fatalf("%d sessions open, %d mcp-go entries after requests without a session; want none", n, held)
	}
}

// TestSessionBelongsToItsKey: key B holding key A's session id gets the same
// 404 as for an unknown id on GET, POST and DELETE, and A's session keeps
// working.
func TestSessionBelongsToItsKey(t *testing.T) {
	h := newSessHarness(t, Options{})
	a := h.open(t, h.tokA)
	held := mcpgoSessions(t, h.srv)
	for _, c := range []struct{ method, body string }{
		{http.MethodGet, ""}, {http.MethodPost, listBody}, {http.MethodDelete, ""},
	} {
		refusedAs(t, "key B "+c.method+" on A's session", h.send(t, c.method, h.tokB, a, c.body), http.StatusNotFound, "not_found")
	}
	if n := mcpgoSessions(t, h.srv); n != held {
		t.Errorf("mcp-go holds %d per-session entries after B's attempts, want %d", n, held)
	}
	if ans := h.send(t, http.MethodPost, h.tokA, a, listBody); ans.code != http.StatusOK || !strings.Contains(ans.body, `"remember"`) {
		t.Fatalf("A's session after B's attempts: %d %s", ans.code, ans.body)
	}
	if ans := h.send(t, http.MethodGet, h.tokA, a, ""); ans.code != http.StatusOK {
		t.Fatalf("A's stream: %d %s", ans.code, ans.body)
	}
	if ans := h.send(t, http.MethodDelete, h.tokA, a, ""); ans.code != http.StatusOK {
		t.Fatalf("A's DELETE: %d %s", ans.code, ans.body)
	}
	refusedAs(t, "A's ended session", h.send(t, http.MethodPost, h.tokA, a, listBody), http.StatusNotFound, "not_found")
}

// TestSessionsPerKeyEvictLeastRecentlyUsed: a key opening one session more
// than its limit ends its own least recently used one (whose id then gets
// 404 and whose stream is closed); its other sessions and other keys'
// sessions are untouched, and mcp-go forgets the evicted one.
func TestSessionsPerKeyEvictLeastRecentlyUsed(t *testing.T) {
	h := newSessHarness(t, Options{MaxSessionsPerKey: 3})
	b := h.open(t, h.tokB)
	s1, s2, s3 := h.open(t, h.tokA), h.open(t, h.tokA), h.open(t, h.tokA)
	st := h.stream(t, h.tokA, s2) // opening a stream uses s2 …
	if st.StatusCode != http.StatusOK {
		t.Fatalf("stream on s2: %d", st.StatusCode)
	}
	for _, id := range []string{s1, s3} { // … and these calls make it the least recently used
		if a := h.send(t, http.MethodPost, h.tokA, id, listBody); a.code != http.StatusOK {
			t.Fatalf("call: %d %s", a.code, a.body)
		}
	}
	s4 := h.open(t, h.tokA)

	refusedAs(t, "the evicted session", h.send(t, http.MethodPost, h.tokA, s2, listBody), http.StatusNotFound, "not_found")
	for name, id := range map[string]string{"s1": s1, "s3": s3, "s4": s4} {
		if a := h.send(t, http.MethodPost, h.tokA, id, listBody); a.code != http.StatusOK {
			t.Errorf("%s after the eviction: %d %s", name, a.code, a.body)
		}
	}
	if a := h.send(t, http.MethodPost, h.tokB, b, listBody); a.code != http.StatusOK {
		t.Errorf("key B's session after A's eviction: %d %s", a.code, a.body)
	}
	if n := h.srv.OpenSessions(); n != 4 {
		t.Errorf("open sessions %d, want 4 (3 of A, 1 of B)", n)
	}
	if mcpgoHolds(t, h.srv, s2) {
		t.Error("mcp-go still holds the evicted session")
	}
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, st.Body); ended <- err }()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the evicted session's stream is still open")
	}
}

// TestSessionsTotalLimit: past the server's limit a new session is refused
// with 429, Retry-After and a message naming the limit; ending a session
// makes room again. With a share of one session per project, eight projects
// fill the table; a project at its share still opens one by ending its own
// least recently used.
func TestSessionsTotalLimit(t *testing.T) {
	const total = ProjectSessionShare // one session per project
	h := newSessHarness(t, Options{MaxSessions: total})
	a1 := h.open(t, h.tokA)
	others := make([]string, total) // one key in each of q0 … q7
	for i := range others {
		others[i], _ = h.env.Key(t, "ws", fmt.Sprintf("q%d", i), "agent", memory.RoleRead)
	}
	for _, tok := range others[:total-1] {
		h.open(t, tok)
	}
	held := mcpgoSessions(t, h.srv)
	a := h.send(t, http.MethodPost, others[total-1], "", initBody)
	refusedAs(t, "a ninth project's initialize at the limit", a, http.StatusTooManyRequests, "unavailable")
	if s, err := strconv.Atoi(a.header.Get("Retry-After")); err != nil || s <= 0 {
		t.Errorf("Retry-After %q, want seconds", a.header.Get("Retry-After"))
	}
	if !strings.Contains(a.body, fmt.Sprintf("limit of %d MCP sessions", total)) || a.header.Get("Mcp-Session-Id") != "" {
		t.Errorf("refusal does not name the limit or carries a session: %s", a.body)
	}
	if n, m := h.srv.OpenSessions(), mcpgoSessions(t, h.srv); n != total || m != held {
		t.Errorf("after the refusal: %d sessions, %d mcp-go entries; want %d, %d", n, m, total, held)
	}
	// Key B shares A's project, which holds its share: B's session ends A's.
	b := h.open(t, h.tokB)
	refusedAs(t, "A's session after B's initialize", h.send(t, http.MethodPost, h.tokA, a1, listBody), http.StatusNotFound, "not_found")
	if a := h.send(t, http.MethodDelete, h.tokB, b, ""); a.code != http.StatusOK {
		t.Fatalf("DELETE: %d %s", a.code, a.body)
	}
	h.open(t, others[total-1])
}

// TestStreamsPerKeyLimit: a key's GET streams beyond its limit get 429 with
// Retry-After; other keys are not affected, and a closed stream frees its
// place.
func TestStreamsPerKeyLimit(t *testing.T) {
	h := newSessHarness(t, Options{MaxStreamsPerKey: 2})
	s1, s2, b := h.open(t, h.tokA), h.open(t, h.tokA), h.open(t, h.tokB)
	first := h.stream(t, h.tokA, s1)
	if second := h.stream(t, h.tokA, s2); first.StatusCode != http.StatusOK || second.StatusCode != http.StatusOK {
		t.Fatalf("streams: %d, %d", first.StatusCode, second.StatusCode)
	}
	a := h.send(t, http.MethodGet, h.tokA, s1, "")
	refusedAs(t, "a third stream", a, http.StatusTooManyRequests, "unavailable")
	if a.header.Get("Retry-After") == "" || !strings.Contains(a.body, "2 open streams on /mcp (GET and subscriptions/listen; its limit)") {
		t.Errorf("refusal lacks Retry-After or the limit: %v %s", a.header, a.body)
	}
	if st := h.stream(t, h.tokB, b); st.StatusCode != http.StatusOK {
		t.Fatalf("key B's stream: %d", st.StatusCode)
	}
	first.Body.Close()
	// The server notices the hang-up asynchronously; bounded wait.
	for i := 0; ; i++ {
		if a := h.send(t, http.MethodGet, h.tokA, s1, ""); a.code == http.StatusOK {
			break
		} else if i == 200 {
			t.Fatalf("a closed stream's place was not freed: %d %s", a.code, a.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSessionLimitsUnderConcurrency: callers of four keys, alone and in
// sets, open, use, stream on and delete sessions at once against small
// limits. The limits hold
// throughout, no ticket is left over, and mcp-go holds exactly the live
// sessions (three entries each), nothing of the ended or evicted ones.
func TestSessionLimitsUnderConcurrency(t *testing.T) {
	const perKey, total, keys, workers, rounds = 3, 8, 4, 16, 25
	h := newSessHarness(t, Options{MaxSessions: total, MaxSessionsPerKey: perKey, MaxStreamsPerKey: 1})
	tokens := []string{h.tokA, h.tokB}
	for i := len(tokens); i < keys; i++ {
		tok, _ := h.env.Key(t, "ws", fmt.Sprintf("p%d", i), fmt.Sprintf("agent-%d", i), memory.RoleRead)
		tokens = append(tokens, tok)
	}
	// A session of a set counts for each of its keys (A and B share a
	// project, so a set holds at most one of them).
	tokens = append(tokens, tokens[0]+","+tokens[2], tokens[2]+","+tokens[3], tokens[1]+","+tokens[3]+","+tokens[2])
	var wg sync.WaitGroup
	var mu sync.Mutex
	var unexpected []string
	note := func(s string) { mu.Lock(); unexpected = append(unexpected, s); mu.Unlock() }
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := tokens[w%len(tokens)]
			for r := 0; r < rounds; r++ {
				a := h.send(t, http.MethodPost, tok, "", initBody)
				id := a.header.Get("Mcp-Session-Id")
				switch {
				case a.code == http.StatusTooManyRequests:
					continue
				case a.code != http.StatusOK || id == "":
					note(fmt.Sprintf("initialize: %d %.100s", a.code, a.body))
					continue
				}
				// Each may find its session evicted by a sibling: 404 is fine.
				for _, m := range []struct{ method, body string }{{http.MethodPost, listBody}, {http.MethodGet, ""}} {
					if c := h.send(t, m.method, tok, id, m.body).code; c != http.StatusOK && c != http.StatusNotFound && c != http.StatusTooManyRequests {
						note(fmt.Sprintf("%s: %d", m.method, c))
					}
				}
				if r%2 == 0 {
					if c := h.send(t, http.MethodDelete, tok, id, "").code; c != http.StatusOK && c != http.StatusNotFound {
						note(fmt.Sprintf("DELETE: %d", c))
					}
				}
				live, _, _, _ := h.srv.ids.size()
				if live > total {
					note(fmt.Sprintf("%d live sessions over the limit of %d", live, total))
				}
			}
		}()
	}
	wg.Wait()
	if len(unexpected) > 0 {
		t.Fatalf("%d unexpected answers, e.g. %v", len(unexpected), unexpected[:min(5, len(unexpected))])
	}
	// Streams end asynchronously after their client hung up (bounded wait).
	for i := 0; ; i++ {
		h.srv.ids.mu.Lock()
		for _, k := range h.srv.ids.keys {
			if k.lru.Len() > perKey {
				t.Errorf("a key holds %d sessions, over its limit of %d", k.lru.Len(), perKey)
			}
		}
		h.srv.ids.mu.Unlock()
		if streams := h.streamsCounted(t, tokens...); streams == 0 {
			break
		} else if i == 200 {
			t.Fatalf("%d streams still counted after every client hung up", h.streamsCounted(t, tokens...))
		}
		time.Sleep(50 * time.Millisecond)
	}
	live, _, _, pending := h.srv.ids.size()
	if live > total || pending != 0 || int64(live) != h.srv.OpenSessions() {
		t.Fatalf("live %d (limit %d), tickets %d, gauge %d", live, total, pending, h.srv.OpenSessions())
	}
	// A handler may still be finishing after its client read the answer
	// (mcp-go registers a session after answering initialize): bounded wait.
	for i := 0; ; i++ {
		n := mcpgoSessions(t, h.srv)
		if n == 3*live {
			break
		} else if i == 200 {
			t.Fatalf("mcp-go holds %d per-session entries for %d live sessions, want %d", n, live, 3*live)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%d live sessions at the end; %+v", live, h.srv.SessionStats())
}

// TestModernRequestsIgnoreSessionHeader: protocol 2026-07-28 has no
// sessions; mcp-go ignores Mcp-Session-Id there and keeps nothing per id, so
// the gate lets such requests through whatever id they carry.
func TestModernRequestsIgnoreSessionHeader(t *testing.T) {
	h := newSessHarness(t, Options{})
	a := h.open(t, h.tokA)
	held := mcpgoSessions(t, h.srv)
	const modern = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"modern","version":"1"}}}}`
	for name, id := range map[string]string{"none": "", "invented": sessionPrefix + randomHex(60<<10), "another key's": a} {
		req, _ := http.NewRequest(http.MethodPost, h.url, strings.NewReader(modern))
		req.Header.Set("Authorization", "Bearer "+h.tokB)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/list")
		if id != "" {
			req.Header.Set("Mcp-Session-Id", id)
		}
		resp, err := rawClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"remember"`) || resp.Header.Get("Mcp-Session-Id") != "" {
			t.Errorf("modern tools/list with %s session id: %d %.200s", name, resp.StatusCode, body)
		}
	}
	if n, m := h.srv.OpenSessions(), mcpgoSessions(t, h.srv); n != 1 || m != held {
		t.Errorf("after modern requests: %d sessions, %d mcp-go entries; want 1, %d", n, m, held)
	}
}

// TestInitializeWithSessionHeader: an initialize carrying its caller's live
// session id opens a new session under the same limits (mcp-go ignores the
// header there); at the server's limit the id it is given is not kept, and
// mcp-go forgets it. Another key's id is 404, as everywhere.
func TestInitializeWithSessionHeader(t *testing.T) {
	const total = 3 * ProjectSessionShare // a share of 3 sessions
	h := newSessHarness(t, Options{MaxSessions: total})
	s1 := h.open(t, h.tokA)
	refusedAs(t, "B's initialize with A's id", h.send(t, http.MethodPost, h.tokB, s1, initBody), http.StatusNotFound, "not_found")

	a := h.send(t, http.MethodPost, h.tokA, s1, initBody)
	s2 := a.header.Get("Mcp-Session-Id")
	if a.code != http.StatusOK || s2 == "" || s2 == s1 {
		t.Fatalf("initialize with A's own id: %d %q", a.code, s2)
	}
	for _, id := range []string{s1, s2} {
		if a := h.send(t, http.MethodPost, h.tokA, id, listBody); a.code != http.StatusOK {
			t.Fatalf("session after re-initialize: %d %s", a.code, a.body)
		}
	}
	// Other projects fill the server: the id minted for A's third (within
	// its project's share) is not kept. (mcp-go has already decided to
	// answer 200 when it asks for the id.)
	h.fill(t, total-2)
	a = h.send(t, http.MethodPost, h.tokA, s1, initBody)
	orphan := a.header.Get("Mcp-Session-Id")
	if a.code != http.StatusOK || orphan == "" {
		t.Fatalf("initialize with a header at the limit: %d %q %s", a.code, orphan, a.body)
	}
	refusedAs(t, "an id minted past the limit", h.send(t, http.MethodPost, h.tokA, orphan, listBody), http.StatusNotFound, "not_found")
	if n := h.srv.OpenSessions(); n != total {
		t.Fatalf("open sessions %d, want %d", n, total)
	}
	for i := 0; mcpgoSessions(t, h.srv) != 3*total; i++ { // finish runs after the answer: bounded wait
		if i == 200 {
			t.Fatalf("mcp-go holds %d per-session entries for %d live sessions", mcpgoSessions(t, h.srv), total)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
