package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/api"
	"munin/internal/changestream"
	"munin/internal/changestream/ssetest"
	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// streamFixture is the REST API on a real HTTP server over the real stack;
// a bearer key is turned into the caller as the front door does.
type streamFixture struct {
	env     *servicetest.Env
	streams *changestream.Streams
	srv     *httptest.Server
	handler http.Handler // what srv serves
	reader  string
	writer  memory.Caller
}

func newStreamFixture(t *testing.T, opts changestream.Options) *streamFixture {
	t.Helper()
	env := servicetest.New(t, service.Options{})
	f := &streamFixture{env: env, streams: changestream.New(env.Svc, opts)}
	f.reader, _ = env.Key(t, "ws", "proj", "reader", memory.RoleRead)
	_, f.writer = env.Key(t, "ws", "proj", "writer", memory.RoleWrite)
	h := api.NewWithStreams(env.Svc, f.streams)
	f.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := env.Svc.Authenticate(r.Context(), strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		if err != nil {
			api.WriteError(w, err)
			return
		}
		h.ServeHTTP(w, r.WithContext(service.WithCaller(r.Context(), c)))
	})
	f.srv = httptest.NewServer(f.handler)
	t.Cleanup(f.srv.Close)
	t.Cleanup(f.streams.Close) // runs first: Close waits for open streams
	return f
}

// sseEvent is one change event of a stream.
type sseEvent struct {
	id     string
	change service.Change
}

type sseClient struct {
	t    *testing.T
	resp *http.Response
	r    *ssetest.Reader
}

// get opens path with the key.
func (f *streamFixture) get(t *testing.T, path, token string, hdr ...string) *http.Response {
	t.Helper()
	return ssetest.Get(t, http.DefaultClient, f.srv.URL+path, append(hdr, "Authorization", "Bearer "+token)...)
}

func (f *streamFixture) open(t *testing.T, path string, hdr ...string) *sseClient {
	t.Helper()
	resp := f.get(t, path, f.reader, hdr...)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return &sseClient{t: t, resp: resp, r: ssetest.NewReader(resp.Body)}
}

// changes reads the next n change events.
func (c *sseClient) changes(n int) []sseEvent {
	c.t.Helper()
	var out []sseEvent
	for len(out) < n {
		e := c.r.NextOf(c.t, "change")
		ev := sseEvent{id: e.ID}
		if err := json.Unmarshal([]byte(e.Data), &ev.change); err != nil {
			c.t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func (f *streamFixture) remember(t *testing.T, slug string) {
	t.Helper()
	if _, err := f.env.Svc.Remember(context.Background(), f.writer, service.RememberRequest{Slug: slug, Content: "text of " + slug}); err != nil {
		t.Fatal(err)
	}
}

// cursorNow is the feed's cursor of the present for c.
func (f *streamFixture) cursorNow(t *testing.T, c memory.Caller) string {
	t.Helper()
	res, err := f.env.Svc.Changes(context.Background(), c, service.ChangesRequest{Since: service.SinceNow})
	if err != nil {
		t.Fatal(err)
	}
	return res.NextCursor
}

func slugsOf(es []sseEvent) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.change.Slug)
	}
	return out
}

func numbered(prefix string, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// TestChangeStreamSendsWritesInOrderWithCursorIDs: each write is one event,
// in commit order, and each event's id is the feed's cursor after it:
// GET /changes from it answers exactly the later ones.
func TestChangeStreamSendsWritesInOrderWithCursorIDs(t *testing.T) {
	f := newStreamFixture(t, changestream.Options{})
	f.remember(t, "before/stream") // history before the cursor is not sent
	reader, _ := f.env.Svc.Authenticate(context.Background(), f.reader)
	start := f.cursorNow(t, reader)
	want := numbered("notes/n", 1, 6)
	for _, s := range want[:3] { // one page of three waits when the stream starts
		f.remember(t, s)
	}
	c := f.open(t, "/api/v1/changes/stream", "Last-Event-ID", start)
	if ct := c.resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q", ct)
	}
	for _, s := range want[3:] { // and three come one by one
		f.remember(t, s)
	}
	got := c.changes(len(want))
	if !slices.Equal(slugsOf(got), want) {
		t.Fatalf("slugs %v, want %v", slugsOf(got), want)
	}
	for i, e := range got {
		if e.change.Project != "ws/proj" || e.change.Version != 1 || e.change.Agent != "writer" || e.change.Kind != "remember" {
			t.Errorf("event %d: %+v", i, e.change)
		}
		res, err := f.env.Svc.Changes(context.Background(), reader, service.ChangesRequest{Since: e.id})
		if err != nil {
			t.Fatalf("changes since event %d's id: %v", i, err)
		}
		var after []string
		for _, ch := range res.Changes {
			after = append(after, ch.Slug)
		}
		if !slices.Equal(after, want[i+1:]) {
			t.Errorf("since event %d's id: %v, want %v", i, after, want[i+1:])
		}
	}
}

// TestChangeStreamResumesFromLastEventID: a client that reconnects with the
// id of the last event it read gets exactly the changes it missed, none
// twice, in order — also across pages and bursts (page size 3, concurrent
// writers whose writes commit in groups).
func TestChangeStreamResumesFromLastEventID(t *testing.T) {
	f := newStreamFixture(t, changestream.Options{PageSize: 3})
	reader, _ := f.env.Svc.Authenticate(context.Background(), f.reader)
	start := f.cursorNow(t, reader)
	for _, s := range numbered("a/", 1, 4) {
		f.remember(t, s)
	}
	c := f.open(t, "/api/v1/changes/stream?since="+start)
	first := c.changes(2)
	c.resp.Body.Close()

	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 5 {
				if _, err := f.env.Svc.Remember(context.Background(), f.writer, service.RememberRequest{Slug: fmt.Sprintf("b/w%d-%d", w, i), Content: "x"}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	c2 := f.open(t, "/api/v1/changes/stream?since=ignored-when-the-header-is-there", "Last-Event-ID", first[1].id)
	rest := c2.changes(2 + 20)
	seen := map[string]bool{}
	for _, s := range slugsOf(first) {
		seen[s] = true
	}
	for _, s := range slugsOf(rest) {
		if seen[s] {
			t.Errorf("%s delivered twice", s)
		}
		seen[s] = true
	}
	if !slices.Equal(slugsOf(rest[:2]), []string{"a/3", "a/4"}) {
		t.Errorf("resumed with %v, want a/3, a/4 first", slugsOf(rest[:2]))
	}
	// Each writer's writes in its order (commit order).
	next := map[string]int{}
	for _, s := range slugsOf(rest[2:]) {
		var w, i int
		if _, err := fmt.Sscanf(s, "b/w%d-%d", &w, &i); err != nil {
			t.Fatalf("unexpected slug %s", s)
		}
		key := fmt.Sprint(w)
		if i != next[key] {
			t.Errorf("writer %d: write %d after %d", w, i, next[key]-1)
		}
		next[key] = i + 1
	}
	// Nothing else was waiting: the next event is a new write.
	f.remember(t, "c/sentinel")
	if e := c2.changes(1); e[0].change.Slug != "c/sentinel" {
		t.Errorf("after the missed changes: %s, want the new write", e[0].change.Slug)
	}
	// since alone resumes the same way, for clients that are not an EventSource.
	c3 := f.open(t, "/api/v1/changes/stream?since="+rest[len(rest)-1].id)
	if e := c3.changes(1); e[0].change.Slug != "c/sentinel" {
		t.Errorf("since=: %s, want c/sentinel", e[0].change.Slug)
	}
}

// TestChangeStreamInvalidCursor: a cursor that is not this server's is 400
// invalid before the stream starts.
func TestChangeStreamInvalidCursor(t *testing.T) {
	f := newStreamFixture(t, changestream.Options{})
	for _, hdr := range [][]string{{"Last-Event-ID", "garbled"}, {}} {
		path := "/api/v1/changes/stream"
		if len(hdr) == 0 {
			path += "?since=garbled"
		}
		resp := f.get(t, path, f.reader, hdr...)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"code":"invalid"`) || !strings.Contains(string(b), "cursor") {
			t.Errorf("%s %v: %d %s, want 400 invalid naming the cursor", path, hdr, resp.StatusCode, b)
		}
	}
	if n := f.streams.Open(); n != 0 {
		t.Errorf("%d streams open", n)
	}
}

// TestChangeStreamLimitPerKey: a key over its open streams gets 429 with
// Retry-After and a message naming the limit; another key of the project
// still opens one.
func TestChangeStreamLimitPerKey(t *testing.T) {
	f := newStreamFixture(t, changestream.Options{MaxPerKey: 2})
	f.open(t, "/api/v1/changes/stream")
	f.open(t, "/api/v1/changes/stream")
	resp := f.get(t, "/api/v1/changes/stream", f.reader)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(string(b), "has 2 change streams open, the most one key may") {
		t.Fatalf("third stream: %d (Retry-After %q) %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	other, _ := f.env.Key(t, "ws", "proj", "other", memory.RoleRead)
	if resp := f.get(t, "/api/v1/changes/stream", other); resp.StatusCode != http.StatusOK {
		t.Errorf("another key's stream: %d", resp.StatusCode)
	}
}

// TestChangeStreamEndsWhenItsKeyIsRevoked: the stream checks its key with
// every heartbeat; revoked, the stream ends with a failure event and hears
// nothing more of the project.
func TestChangeStreamEndsWhenItsKeyIsRevoked(t *testing.T) {
	f := newStreamFixture(t, changestream.Options{Heartbeat: 10 * time.Millisecond})
	reader, err := f.env.Svc.Authenticate(context.Background(), f.reader)
	if err != nil {
		t.Fatal(err)
	}
	c := f.open(t, "/api/v1/changes/stream")
	if err := f.env.Svc.RevokeKey(context.Background(), reader.First().ID); err != nil {
		t.Fatal(err)
	}
	for {
		e, err := c.r.Next()
		if err != nil {
			t.Fatalf("the stream of a revoked key went on until %v", err)
		}
		if e.Type == "change" || e.Type == "resync" {
			t.Fatalf("event %s after the revocation", e.Type)
		}
		if e.Type == "failure" {
			if !strings.Contains(e.Data, `"code":"unauthorized"`) || !strings.Contains(e.Data, "was revoked") {
				t.Errorf("failure %s", e.Data)
			}
			break
		}
	}
	if _, err := c.r.Next(); err != io.EOF {
		t.Errorf("after the failure: %v, want the end of the stream", err)
	}
}
