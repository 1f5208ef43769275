package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"munin/internal/changestream"
	"munin/internal/changestream/ssetest"
	"munin/internal/memory"
	"munin/internal/service"
)

// open GETs path; a stream (200) is closed at once and answers with an
// empty body, any other answer with its body.
func (b *browser) open(path string) (int, string) {
	b.t.Helper()
	resp := ssetest.Get(b.t, b.c, b.u.srv.URL+path)
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, ""
	}
	all, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(all)
}

// stream GETs path with the session's cookie and leaves the answer open
// (ssetest.Get closes it when the test ends).
func (b *browser) stream(path string) (*http.Response, *ssetest.Reader) {
	b.t.Helper()
	resp := ssetest.Get(b.t, b.c, b.u.srv.URL+path)
	return resp, ssetest.NewReader(resp.Body)
}

// nextChange reads events from r until a change and returns it.
func nextChange(t *testing.T, r *ssetest.Reader) (id string, ch service.Change) {
	t.Helper()
	e := r.NextOf(t, "change")
	if err := json.Unmarshal([]byte(e.Data), &ch); err != nil {
		t.Fatal(err)
	}
	return e.ID, ch
}

// TestProjectStreamCarriesThisProjectOnly: a session with keys of two
// projects opens one project's stream; an agent's write to the other
// project is not in it, a write to this one is, with the id the feed
// resumes from.
func TestProjectStreamCarriesThisProjectOnly(t *testing.T) {
	u := newUI(t)
	otherToken, c := u.env.Key(t, "ws", "other", "carol", memory.RoleWrite)
	other := c.First()
	b := u.signIn(t, u.reader)
	if code, _ := b.post("/session/keys", map[string][]string{"key": {otherToken}}); code != http.StatusSeeOther {
		t.Fatalf("add a key: %d", code)
	}
	resp, r := b.stream(projPath + changestream.Suffix)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	u.remember(t, other, "elsewhere/note", "not this project's")
	u.remember(t, u.writerKey, "decisions/db", "We use SQLite.")
	id, ch := nextChange(t, r)
	if ch.Project != "ws/proj" || ch.Slug != "decisions/db" || ch.Version != 1 || ch.Agent != "alice" || ch.Kind != "remember" {
		t.Fatalf("first change %+v, want alice's remember of decisions/db in ws/proj", ch)
	}
	// The id is a cursor of the feed: nothing after it yet.
	res, err := u.env.Svc.Changes(context.Background(), memory.NewCaller(u.readKey), service.ChangesRequest{Since: id})
	if err != nil || len(res.Changes) != 0 {
		t.Errorf("changes after the event's id: %+v, %v; want none", res.Changes, err)
	}
}

// TestProjectPageStartsItsStreamWhereItWasMade: the page carries the
// feed's cursor of the moment it was made, so a write between the page and
// its stream's connection is announced too.
func TestProjectPageStartsItsStreamWhereItWasMade(t *testing.T) {
	u := newUI(t)
	b := u.signIn(t, u.reader)
	_, page := b.get(projPath)
	m := liveRe.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no live notice with its stream on the project page")
	}
	u.remember(t, u.writerKey, "written/while-loading", "x")
	resp, r := b.stream(strings.ReplaceAll(m[1], "&amp;", "&"))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	if _, ch := nextChange(t, r); ch.Slug != "written/while-loading" {
		t.Errorf("first change %+v, want the write made before the stream connected", ch)
	}
}

var liveRe = regexp.MustCompile(`<p id="live" class="notice live" aria-live="polite" data-stream="([^"]+)"></p>`)
