package web

import (
	"net/http"
	"net/url"
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
	if n, _ := w.u.h.sessions.leastRecentLocked(func(*session) bool { return true }); n > w.u.h.sessions.total {
		t.Errorf("%d sessions, over the total of %d", n, w.u.h.sessions.total)
	}
}
