package web

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"munin/internal/memory"
)

// newKey creates workspace/project if new and a key of it; it returns the
// token and the key.
func (u *ui) newKey(t testing.TB, workspace, project, agent string, role memory.Role) (string, memory.Key) {
	t.Helper()
	token, c := u.env.Key(t, workspace, project, agent, role)
	return token, c.First()
}

// addKey posts the add-a-key form of the overview. Adding a key moves the
// session to a new id and CSRF token; the browser takes the new token (from
// the session table, so the flash stays for the next page).
func (b *browser) addKey(token string) (int, string) {
	b.t.Helper()
	code, body := b.post("/session/keys", url.Values{"key": {token}})
	b.refreshCSRF()
	return code, body
}

// refreshCSRF takes the CSRF token of the browser's current session.
func (b *browser) refreshCSRF() {
	b.t.Helper()
	u := b.u
	for _, c := range b.c.Jar.Cookies(mustURL(b.t, u.srv.URL)) {
		if c.Name == cookieName {
			u.h.sessions.mu.Lock()
			if sess, ok := u.h.sessions.m[c.Value]; ok {
				b.csrf = sess.csrf
			}
			u.h.sessions.mu.Unlock()
		}
	}
}

var projectLinkRe = regexp.MustCompile(`<a href="/w/([^/"]+)/p/([^/"]+)(?:/settings)?" class="project-link">`)

// overviewProjects lists the projects the overview links to, sorted.
func (b *browser) overviewProjects() []string {
	b.t.Helper()
	code, body := b.get("/")
	if code != http.StatusOK || !strings.Contains(body, `id="whoami"`) {
		b.t.Fatalf("overview: %d, signed in %v", code, strings.Contains(body, `id="whoami"`))
	}
	var out []string
	for _, m := range projectLinkRe.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1]+"/"+m[2])
	}
	slices.Sort(out)
	return out
}

// flashOf is the flash message of a page ("" without one).
func flashOf(body string) string {
	if i := strings.Index(body, `id="flash">`); i >= 0 {
		rest := body[i+len(`id="flash">`):]
		if j := strings.Index(rest, "<"); j >= 0 {
			return html.UnescapeString(rest[:j])
		}
	}
	return ""
}

// TestAddKeyShowsBothProjects: a person signed in with a key of ws/proj
// adds a key of ws/beta; the flash names the added project and the overview
// then lists exactly the two projects — not ws/gamma, which the session
// holds no key for.
func TestAddKeyShowsBothProjects(t *testing.T) {
	u := newUI(t)
	beta, _ := u.newKey(t, ws, "beta", "beta-bot", memory.RoleWrite)
	u.newKey(t, ws, "gamma", "gamma-bot", memory.RoleWrite)
	b := u.signIn(t, u.writer)
	if got := b.overviewProjects(); !slices.Equal(got, []string{"ws/proj"}) {
		t.Fatalf("before adding: overview lists %v, want ws/proj only", got)
	}
	code, _ := b.addKey(beta)
	if code != http.StatusSeeOther {
		t.Fatalf("add key: %d, want 303", code)
	}
	_, body := b.get("/")
	if f := flashOf(body); !strings.Contains(f, "beta-bot (write, ws/beta)") {
		t.Errorf("flash after adding %q, want it to name the key's agent, role and project", f)
	}
	if got := b.overviewProjects(); !slices.Equal(got, []string{"ws/beta", "ws/proj"}) {
		t.Errorf("after adding: overview lists %v, want exactly ws/beta and ws/proj", got)
	}
	// Each project page opens, with its own key's agent in the header.
	for path, agent := range map[string]string{projPath: "alice", "/w/ws/p/beta": "beta-bot"} {
		code, body := b.get(path)
		if code != http.StatusOK || !strings.Contains(body, `<span id="whoami">`+agent+`</span>`) {
			t.Errorf("GET %s: %d, want 200 with %s in the header", path, code, agent)
		}
	}
	if code, _ := b.get("/w/ws/p/gamma"); code != http.StatusNotFound {
		t.Errorf("GET a project without a key in the session: %d, want 404", code)
	}
	// The key is counted once: adding it again changes nothing.
	if code, _ := b.addKey(beta); code != http.StatusSeeOther {
		t.Fatalf("add the same key again: %d", code)
	}
	if _, body := b.get("/"); !strings.Contains(flashOf(body), "Nothing changed") {
		t.Errorf("adding a held key again: flash %q, want Nothing changed", flashOf(body))
	}
	if got := b.overviewProjects(); len(got) != 2 {
		t.Errorf("after adding a key twice: %v", got)
	}
}

// TestAddKeyRefusesWhatSignInRefuses: an unknown, malformed, empty or
// revoked key is refused with the same words as at sign-in, and the session
// goes on unchanged.
func TestAddKeyRefusesWhatSignInRefuses(t *testing.T) {
	u := newUI(t)
	revoked, rk := u.newKey(t, ws, "beta", "gone", memory.RoleRead)
	if err := u.env.Svc.RevokeKey(context.Background(), rk.ID); err != nil {
		t.Fatal(err)
	}
	b := u.signIn(t, u.writer)
	for _, key := range []string{"munin_nope", "not-a-key", "", " ", revoked, strings.Repeat("munin_x", 2000)} {
		_, signIn := u.browser(t).do("POST", "/login", url.Values{"key": {key}})
		code, body := b.addKey(key)
		if code != http.StatusUnauthorized || errorText(body) != errorText(signIn) || !strings.Contains(body, "unknown or revoked") {
			t.Errorf("add key %.20q: %d %q, want 401 with the sign-in's words %q", key, code, errorText(body), errorText(signIn))
		}
		if !strings.Contains(body, `id="add-key-form"`) || !strings.Contains(body, `id="whoami"`) {
			t.Errorf("add key %.20q: the refusal is not shown on the signed-in overview", key)
		}
	}
	if got := b.overviewProjects(); !slices.Equal(got, []string{"ws/proj"}) {
		t.Errorf("after refused keys the overview lists %v, want ws/proj only", got)
	}
}

// TestSignInWithAKeyList: the sign-in form takes keys separated by commas,
// as the Authorization header does; one bad key refuses the list, naming
// its position, never a project.
func TestSignInWithAKeyList(t *testing.T) {
	u := newUI(t)
	beta, _ := u.newKey(t, ws, "beta", "beta-bot", memory.RoleRead)
	b := u.signIn(t, u.writer+" , "+beta)
	if got := b.overviewProjects(); !slices.Equal(got, []string{"ws/beta", "ws/proj"}) {
		t.Errorf("signed in with two keys, the overview lists %v", got)
	}
	resp, body := u.browser(t).do("POST", "/login", url.Values{"key": {u.writer + "," + "munin_nope"}})
	if resp.StatusCode != http.StatusUnauthorized || errorText(body) != "key 2 of 2 is unknown or revoked; check it and try again" {
		t.Errorf("a list with an unknown key: %d %q", resp.StatusCode, errorText(body))
	}
	if len(resp.Cookies()) != 0 {
		t.Errorf("a refused list set cookies %v", resp.Cookies())
	}
}

// TestRolesFollowTheKeyForEachProject: with a read key of ws/proj and a
// write key of ws/beta in one session, the edit buttons appear in ws/beta
// only; a write into ws/proj is refused and changes nothing, a write into
// ws/beta is recorded under the ws/beta key's agent.
func TestRolesFollowTheKeyForEachProject(t *testing.T) {
	u := newUI(t)
	beta, betaKey := u.newKey(t, ws, "beta", "beta-writer", memory.RoleWrite)
	u.remember(t, u.writerKey, "a", "alpha's entry")
	u.remember(t, betaKey, "a", "beta's entry")
	b := u.signIn(t, u.reader)
	if code, _ := b.addKey(beta); code != http.StatusSeeOther {
		t.Fatalf("add key: %d", code)
	}
	edits := []string{`id="new-entry"`, `id="edit"`, `id="forget"`, "/save", "/edit/"}
	for _, tc := range []struct {
		path     string
		role     memory.Role
		canWrite bool
	}{
		{projPath, memory.RoleRead, false},
		{projPath + "/e/a", memory.RoleRead, false},
		{"/w/ws/p/beta", memory.RoleWrite, true},
		{"/w/ws/p/beta/e/a", memory.RoleWrite, true},
	} {
		code, body := b.get(tc.path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d", tc.path, code)
		}
		if !strings.Contains(body, `id="role">`+string(tc.role)+`<`) {
			t.Errorf("GET %s: the header does not show the role %s", tc.path, tc.role)
		}
		shown := 0
		for _, e := range edits {
			if strings.Contains(body, e) {
				shown++
			}
		}
		if tc.canWrite && shown == 0 || !tc.canWrite && shown != 0 {
			t.Errorf("GET %s: %d edit controls shown, want them only where the key writes", tc.path, shown)
		}
	}
	for _, path := range []string{projPath + "/new", projPath + "/edit/a"} {
		if code, _ := b.get(path); code != http.StatusForbidden {
			t.Errorf("GET %s with a read key for it: %d, want 403", path, code)
		}
	}
	form := url.Values{"slug": {"a"}, "content": {"overwritten"}, "expected_version": {"1"}}
	if code, _ := b.post(projPath+"/save", form); code != http.StatusForbidden {
		t.Errorf("POST save into ws/proj (read key): %d, want 403", code)
	}
	if n := u.versions(t, "a"); n != 1 {
		t.Errorf("ws/proj's entry has %d versions, want 1", n)
	}
	if code, body := b.post("/w/ws/p/beta/save", form); code != http.StatusSeeOther {
		t.Fatalf("POST save into ws/beta (write key): %d %s", code, errorText(body))
	}
	got, err := u.get(betaKey, "a")
	if err != nil || got.Version != 2 || got.Agent != "beta-writer" {
		t.Errorf("ws/beta's entry after the save: %+v %v; want version 2 by beta-writer", got, err)
	}
}

// TestSearchAllMyProjects: the search "all my projects" returns hits of
// every project of the session as one list, each naming and linking its
// project, and nothing of a project the session holds no key for.
func TestSearchAllMyProjects(t *testing.T) {
	u := newUI(t)
	beta, betaKey := u.newKey(t, ws, "beta", "beta-bot", memory.RoleRead)
	_, gammaKey := u.newKey(t, ws, "gamma", "gamma-bot", memory.RoleWrite)
	u.remember(t, u.writerKey, "notes/alpha", "the quarterly zeppelin report of alpha")
	_, betaWriter := u.newKey(t, ws, "beta", "beta-writer", memory.RoleWrite)
	u.remember(t, betaWriter, "notes/beta", "zeppelin maintenance for beta")
	u.remember(t, gammaKey, "notes/gamma", "zeppelin secrets of gamma")
	b := u.signIn(t, u.reader)
	if code, _ := b.addKey(beta); code != http.StatusSeeOther {
		t.Fatalf("add key: %d", code)
	}
	code, body := b.get("/search?q=zeppelin")
	if code != http.StatusOK {
		t.Fatalf("search all: %d %s", code, errorText(body))
	}
	for _, want := range []string{`href="/w/ws/p/proj/e/notes/alpha"`, `href="/w/ws/p/beta/e/notes/beta"`,
		`class="hit-project" href="/w/ws/p/proj">ws/proj</a>`, `class="hit-project" href="/w/ws/p/beta">ws/beta</a>`} {
		if !strings.Contains(body, want) {
			t.Errorf("search all lacks %s", want)
		}
	}
	if strings.Contains(body, "gamma") {
		t.Error("search all shows a project the session holds no key for")
	}
	if n := strings.Count(body, `class="hit"`); n != 2 {
		t.Errorf("%d hits, want 2", n)
	}
	// The project page's scope select leads to the same search.
	resp, _ := b.do("GET", projPath+"?q=zeppelin&scope=all", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/search?q=zeppelin" {
		t.Errorf("scope all on a project page: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if _, body := b.get(projPath); !strings.Contains(body, `<option value="all">all my projects</option>`) {
		t.Error("the project search of a two-key session offers no scope all my projects")
	}
	// Narrowed to a project, it is that project's search, which answers
	// for a project without a key as for a missing one.
	resp, _ = b.do("GET", "/search?q=zeppelin&project=ws/gamma", nil)
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/w/ws/p/gamma?q=zeppelin" {
		t.Fatalf("search narrowed to a project: %d to %q", resp.StatusCode, loc)
	}
	code, body = b.get("/w/ws/p/gamma?q=zeppelin")
	_, missing := b.get("/w/ws/p/nope?q=zeppelin")
	if code != http.StatusNotFound || strings.Contains(body, "secrets") || body != strings.ReplaceAll(missing, "nope", "gamma") {
		t.Errorf("search in a project without a key: %d, want the 404 of a missing project", code)
	}
	if code, _ := b.get("/search?q=zeppelin&project=ACME/x"); code != http.StatusBadRequest {
		t.Errorf("a malformed project: %d, want 400", code)
	}
	// Web searches are not logged, in any project.
	u.env.Svc.FlushSearchLog()
	for _, k := range []memory.Key{u.readKey, betaKey} {
		if rows, err := u.searchLog(k); err != nil || len(rows) != 0 {
			t.Errorf("search log of %s: %d rows, %v; want none", k.Project, len(rows), err)
		}
	}
}

// TestOverviewGroupsByWorkspace: keys added in any order, the overview
// shows each workspace once, its projects by name.
func TestOverviewGroupsByWorkspace(t *testing.T) {
	u := newUI(t)
	b := u.signIn(t, u.reader)
	for _, p := range []memory.ProjectRef{{Workspace: "zeta", Project: "one"}, {Workspace: ws, Project: "alpha"}, {Workspace: "zeta", Project: "a"}} {
		token, _ := u.newKey(t, p.Workspace, p.Project, "bot", memory.RoleRead)
		if code, _ := b.addKey(token); code != http.StatusSeeOther {
			t.Fatalf("add a key of %s: %d", p, code)
		}
	}
	_, body := b.get("/")
	if n := strings.Count(body, `<span class="ws-name">`); n != 2 {
		t.Errorf("%d workspace groups, want 2 (ws and zeta)", n)
	}
	var order []string
	for _, m := range projectLinkRe.FindAllStringSubmatch(body, -1) {
		order = append(order, m[1]+"/"+m[2])
	}
	if want := []string{"ws/alpha", "ws/proj", "zeta/a", "zeta/one"}; !slices.Equal(order, want) {
		t.Errorf("overview order %v, want %v", order, want)
	}
}

// TestAddKeyRotatesTheSession: adding a key moves the session to a fresh id
// and CSRF token, as a sign-in does: an id planted in the browser before
// (session fixation) does not reach the project of the key added later.
func TestAddKeyRotatesTheSession(t *testing.T) {
	u := newUI(t)
	beta, _ := u.newKey(t, ws, "beta", "beta-bot", memory.RoleRead)
	b := u.signIn(t, u.reader)
	planted := u.browser(t)
	planted.c.Jar.SetCookies(mustURL(t, u.srv.URL), b.c.Jar.Cookies(mustURL(t, u.srv.URL)))
	oldCSRF := b.csrf
	if code, _ := b.addKey(beta); code != http.StatusSeeOther {
		t.Fatalf("add key: %d", code)
	}
	if b.csrf == oldCSRF {
		t.Error("the CSRF token stayed the same after adding a key")
	}
	if code, _ := planted.get("/w/ws/p/beta"); code != http.StatusSeeOther {
		t.Errorf("the old session id after adding a key: %d, want 303 to sign in", code)
	}
	if code, _ := b.get("/w/ws/p/beta"); code != http.StatusOK {
		t.Errorf("the new session id: %d, want 200", code)
	}
	if code, _ := b.post("/session/keys", url.Values{"key": {beta}, "csrf": {oldCSRF}}); code != http.StatusForbidden {
		t.Errorf("a form with the old CSRF token: %d, want 403", code)
	}
}
