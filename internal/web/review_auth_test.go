package web

import (
	"html"
	"munin/internal/memory"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSignInsOfOneProjectCannotEvictOtherProjects: a project admin can make
// as many keys of its project as it likes and sign in with each; once the
// session table is full, that must cost its own project's sessions, never
// another project's or the server admin's.
func TestSignInsOfOneProjectCannotEvictOtherProjects(t *testing.T) {
	w := newRoleWorld(t)
	w.u.h.sessions.perProject, w.u.h.sessions.total = 8, 20
	gamma := w.u.signIn(t, w.gammaAdmin)
	ops := w.u.signIn(t, w.server)
	mallory := w.u.signIn(t, w.alphaAdmin)
	for i := range 10 {
		w.u.clock.advance(time.Second)
		code, body := mallory.post("/keys", url.Values{"workspace": {"acme"}, "project": {"alpha"}, "agent": {"m" + strconv.Itoa(i)}, "role": {"read"}})
		token := regexpToken.FindStringSubmatch(body)
		if code != http.StatusOK || token == nil {
			t.Fatalf("alpha admin creates a key: %d %s", code, errorText(body))
		}
		for range 3 {
			w.u.clock.advance(time.Second)
			w.u.signIn(t, token[1])
		}
	}
	for name, b := range map[string]*browser{"gamma's admin": gamma, "the server admin": ops} {
		// Signed out, "/" is the sign-in page (200 too): look for the person.
		if code, body := b.get("/"); code != http.StatusOK || !strings.Contains(body, `id="whoami"`) {
			t.Errorf("%s was signed out by another project's sign-ins", name)
		}
	}
	if n, _ := w.u.h.sessions.leastRecentLocked(nil, func(*session) bool { return true }); n > w.u.h.sessions.total {
		t.Errorf("%d sessions, over the total of %d", n, w.u.h.sessions.total)
	}
}

// TestLogCursorTellsNothingOfOtherProjects: audit and search-log rows are
// numbered per workspace file, so a row id in the "Older" link would tell a
// project's reader how many rows the other projects of its workspace have
// (and that they exist). The link carries a sealed cursor instead; it pages
// on as before, and one the server did not make is refused.
func TestLogCursorTellsNothingOfOtherProjects(t *testing.T) {
	u := newUI(t)
	_, c := u.env.Key(t, ws, "beta", "other-team", memory.RoleWrite)
	beta := c.First()
	for i := range logRows + 1 {
		u.remember(t, beta, "b"+strconv.Itoa(i), "beta's write")
		u.remember(t, u.writerKey, "a"+strconv.Itoa(i), "alpha's write")
	}
	b := u.signIn(t, u.reader)
	code, body := b.get(projPath + "/audit")
	m := regexp.MustCompile(`rel="next" href="([^"]+)"`).FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("audit page: %d, no Older link", code)
	}
	next := html.UnescapeString(m[1])
	link, err := url.Parse(next)
	if err != nil {
		t.Fatal(err)
	}
	before := link.Query().Get("before")
	if _, err := strconv.ParseInt(before, 10, 64); err == nil {
		t.Errorf("the Older link carries the row id %s in clear", before)
	}
	if code, body := b.get(next); code != http.StatusOK || strings.Count(body, `class="audit-row`) != 1 || strings.Contains(body, "beta") {
		t.Errorf("the second page: %d, %d rows; want alpha's one remaining row", code, strings.Count(body, `class="audit-row`))
	}
	for _, bad := range []string{"12", before + "AA", "%%%"} {
		if code, _ := b.get(projPath + "/audit?before=" + url.QueryEscape(bad)); code != http.StatusBadRequest {
			t.Errorf("before=%q: %d, want 400", bad, code)
		}
	}
}
