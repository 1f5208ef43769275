package mcpserver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
)

// projectKeys mints n read keys of workspace ws, project p.
func (h *sessHarness) projectKeys(t *testing.T, p string, n int) []string {
	t.Helper()
	out := make([]string, n)
	for i := range out {
		out[i], _ = h.env.Key(t, "ws", p, fmt.Sprintf("%s-agent-%d", p, i), memory.RoleRead)
	}
	return out
}

// TestProjectSessionShare is the attack of issue 21: many keys of one project
// open sessions as fast as they can, each up to and past its own limit,
// together far past the server's. The project never holds more than its
// share of the table (its least recently used sessions end, whichever of its
// keys opened them), so another project's initialize succeeds during and
// after the flood; once the sessions end, nothing of them is kept.
func TestProjectSessionShare(t *testing.T) {
	const total, perKey, keys, opens = 64, 4, 20, 6
	share := total / ProjectSessionShare
	h := newSessHarness(t, Options{MaxSessions: total, MaxSessionsPerKey: perKey})
	flood := h.projectKeys(t, "p", keys)
	other := h.projectKeys(t, "q", 1)[0]
	// The project's oldest session, of a key that opens nothing else: only
	// the project's share can end it.
	oldest := h.open(t, h.tokA)

	var wg sync.WaitGroup
	var mu sync.Mutex
	var unexpected []string
	var mine [][2]string // the flood's sessions (token, id), to end them afterwards
	note := func(s string) { mu.Lock(); unexpected = append(unexpected, s); mu.Unlock() }
	for w := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range opens {
				a := h.send(t, http.MethodPost, flood[w], "", initBody)
				id := a.header.Get("Mcp-Session-Id")
				switch {
				case a.code == http.StatusTooManyRequests && strings.Contains(a.body, "at once"):
					continue // more of the project's initializes in flight than its share
				case a.code != http.StatusOK || id == "":
					note(fmt.Sprintf("flood initialize: %d %.120s", a.code, a.body))
					continue
				}
				mu.Lock()
				mine = append(mine, [2]string{flood[w], id})
				mu.Unlock()
				if n := h.srv.ids.projectSessions(memory.ProjectRef{Workspace: "ws", Project: "p"}); n > share {
					note(fmt.Sprintf("the project holds %d sessions, over its share of %d", n, share))
				}
			}
		}()
	}
	// Another project's key opens sessions while the flood runs (up to its
	// own limit, with the one after the flood): every one succeeds.
	var theirs, theirsRefused []string
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range perKey - 1 {
			a := h.send(t, http.MethodPost, other, "", initBody)
			if a.code != http.StatusOK {
				theirsRefused = append(theirsRefused, fmt.Sprintf("%d %.160s", a.code, a.body))
				continue
			}
			theirs = append(theirs, a.header.Get("Mcp-Session-Id"))
		}
	}()
	wg.Wait()
	if len(theirsRefused) > 0 {
		t.Errorf("%d of another project's %d initializes during the flood failed, e.g. %s", len(theirsRefused), perKey-1, theirsRefused[0])
	}
	if len(unexpected) > 0 {
		t.Errorf("%d unexpected answers, e.g. %v", len(unexpected), unexpected[:min(5, len(unexpected))])
	}
	if a := h.send(t, http.MethodPost, other, "", initBody); a.code != http.StatusOK {
		t.Fatalf("another project's initialize after the flood: %d %s", a.code, a.body)
	} else {
		theirs = append(theirs, a.header.Get("Mcp-Session-Id"))
	}
	refusedAs(t, "the project's oldest session after the flood", h.send(t, http.MethodPost, h.tokA, oldest, listBody), http.StatusNotFound, "not_found")
	for _, id := range theirs {
		if a := h.send(t, http.MethodPost, other, id, listBody); a.code != http.StatusOK {
			t.Errorf("another project's session after the flood: %d %s", a.code, a.body)
		}
	}
	if n := h.srv.OpenSessions(); n != int64(share+len(theirs)) {
		t.Errorf("open sessions %d, want the project's share %d and the other project's %d", n, share, len(theirs))
	}
	if st := h.srv.SessionStats(); st.Evicted < int64(keys*opens+1-share) {
		t.Errorf("%d sessions evicted, want at least %d", st.Evicted, keys*opens+1-share)
	}

	// Every session ends: the manager keeps nothing of the project or its keys.
	for _, m := range mine {
		h.send(t, http.MethodDelete, m[0], m[1], "") // 404 for an evicted one
	}
	for _, id := range theirs {
		h.send(t, http.MethodDelete, other, id, "")
	}
	if live, keys, projects, pending := h.srv.ids.size(); live != 0 || keys != 0 || projects != 0 || pending != 0 {
		t.Errorf("after every session ended the manager holds %d sessions, %d keys, %d projects, %d tickets; want none", live, keys, projects, pending)
	}
}

// TestProjectStreamShare: the keys of one project together hold at most
// ProjectStreamKeys times one key's open GET streams; the excess is refused
// with 429 naming the project's limit, another project still streams, and a
// closed stream frees its place.
func TestProjectStreamShare(t *testing.T) {
	const perKey, keys = 1, 6
	limit := ProjectStreamKeys * perKey
	h := newSessHarness(t, Options{MaxStreamsPerKey: perKey})
	toks := h.projectKeys(t, "p", keys)
	ids := make([]string, keys)
	for i, tok := range toks {
		ids[i] = h.open(t, tok)
	}
	other := h.projectKeys(t, "q", 1)[0]
	otherID := h.open(t, other)

	type opened struct {
		i      int
		resp   *http.Response
		cancel context.CancelFunc
	}
	results := make(chan opened, keys)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			results <- opened{i, h.request(t, ctx, http.MethodGet, toks[i], ids[i], ""), cancel}
		}()
	}
	wg.Wait()
	close(results)
	var open []opened
	var refused []string
	for o := range results {
		if o.resp.StatusCode == http.StatusOK {
			open = append(open, o)
			t.Cleanup(func() { o.cancel(); o.resp.Body.Close() })
			continue
		}
		b, _ := io.ReadAll(o.resp.Body)
		o.resp.Body.Close()
		o.cancel()
		refusedAs(t, "a stream past the project's limit", answer{code: o.resp.StatusCode, header: o.resp.Header, body: string(b)}, http.StatusTooManyRequests, "unavailable")
		if !strings.Contains(string(b), fmt.Sprintf("%d open streams on /mcp (GET and subscriptions/listen; the project", limit)) || o.resp.Header.Get("Retry-After") == "" {
			t.Errorf("refusal does not name the project's limit or lacks Retry-After: %s", b)
		}
		refused = append(refused, ids[o.i])
	}
	if len(open) != limit || len(refused) != keys-limit {
		t.Fatalf("%d streams open, %d refused; want %d and %d", len(open), len(refused), limit, keys-limit)
	}
	if st := h.stream(t, other, otherID); st.StatusCode != http.StatusOK {
		t.Fatalf("another project's stream: %d", st.StatusCode)
	}
	if n := h.srv.ids.projectStreams.Busy(memory.ProjectRef{Workspace: "ws", Project: "p"}); n != limit {
		t.Errorf("the project's streams counted: %d, want %d", n, limit)
	}
	// One stream closes: a refused key of the project gets its place (the
	// server notices the hang-up asynchronously; bounded wait).
	open[0].cancel()
	open[0].resp.Body.Close()
	var retry string
	for i, k := range ids {
		if k == refused[0] {
			retry = toks[i]
		}
	}
	for i := 0; ; i++ {
		if a := h.send(t, http.MethodGet, retry, refused[0], ""); a.code == http.StatusOK {
			break
		} else if i == 200 {
			t.Fatalf("a closed stream's place was not freed for the project: %d %s", a.code, a.body)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Ending the sessions ends their streams; nothing stays counted or kept.
	for i, id := range ids {
		h.send(t, http.MethodDelete, toks[i], id, "")
	}
	h.send(t, http.MethodDelete, other, otherID, "")
	for i := 0; ; i++ {
		n := h.streamsCounted(t, append(toks, other)...)
		live, keys, projects, pending := h.srv.ids.size()
		if n == 0 && live+keys+projects+pending == 0 {
			break
		} else if i == 200 {
			t.Fatalf("after every session ended: %d streams counted; %d sessions, %d keys, %d projects, %d tickets kept", n, live, keys, projects, pending)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fill opens n sessions for keys of new projects (f0, f1, …), each up to
// its project's share.
func (h *sessHarness) fill(t *testing.T, n int) {
	t.Helper()
	share := h.srv.ids.maxPerProject
	var tok string
	for i := range n {
		if i%share == 0 {
			tok, _ = h.env.Key(t, "ws", fmt.Sprintf("f%d", i/share), "filler", memory.RoleRead)
		}
		h.open(t, tok)
	}
}

// TestSessionChargedToFirstKeysProject: a session counts against the share
// of the project of the caller's first key only — a caller holding a key of
// a full project besides its first does not end that project's sessions —
// and server-admin keys share one project of their own.
func TestSessionChargedToFirstKeysProject(t *testing.T) {
	const total = 2 * ProjectSessionShare // a share of 2 sessions
	h := newSessHarness(t, Options{MaxSessions: total})
	tokQ := h.projectKeys(t, "q", 1)[0]
	a1, a2 := h.open(t, h.tokA), h.open(t, h.tokA) // project p at its share
	qa := h.open(t, tokQ+","+h.tokA)               // charged to q
	for _, id := range []string{a1, a2} {
		if a := h.send(t, http.MethodPost, h.tokA, id, listBody); a.code != http.StatusOK {
			t.Fatalf("p's session after a session charged to q: %d %s", a.code, a.body)
		}
	}
	h.open(t, h.tokA+","+tokQ) // charged to p: ends p's least recently used, a1
	refusedAs(t, "p's least recently used session", h.send(t, http.MethodPost, h.tokA, a1, listBody), http.StatusNotFound, "not_found")
	if a := h.send(t, http.MethodPost, tokQ+","+h.tokA, qa, listBody); a.code != http.StatusOK {
		t.Fatalf("the session charged to q: %d %s", a.code, a.body)
	}

	admin1, _ := h.env.ServerAdmin(t, "admin-1")
	admin2, _ := h.env.ServerAdmin(t, "admin-2")
	s1, _, _ := h.open(t, admin1), h.open(t, admin2), h.open(t, admin2)
	refusedAs(t, "the server admins' least recently used session", h.send(t, http.MethodPost, admin1, s1, listBody), http.StatusNotFound, "not_found")
	if n := h.srv.ids.projectSessions(memory.ProjectRef{}); n != 2 {
		t.Errorf("server-admin sessions %d, want their share of 2", n)
	}
}
