package web

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"munin/internal/memory"
	"munin/internal/reqlog"
	"munin/internal/reqlog/logtest"
)

// TestRevokedSecondKeyLeavesTheSession: revoking the second key of a
// session takes its project out of the session at the next request, and
// the page says so; the first key goes on working. Revoking the last key
// ends the session.
func TestRevokedSecondKeyLeavesTheSession(t *testing.T) {
	u := newUI(t)
	beta, betaKey := u.newKey(t, ws, "beta", "beta-bot", memory.RoleWrite)
	b := u.signIn(t, u.writer)
	if code, _ := b.addKey(beta); code != http.StatusSeeOther {
		t.Fatalf("add key: %d", code)
	}
	if code, _ := b.get("/w/ws/p/beta"); code != http.StatusOK {
		t.Fatalf("ws/beta before the revocation: %d", code)
	}
	if err := u.env.Svc.RevokeKey(context.Background(), betaKey.ID); err != nil {
		t.Fatal(err)
	}
	// A write into ws/beta right after the revocation is refused, and the
	// page says why.
	code, body := b.post("/w/ws/p/beta/save", url.Values{"slug": {"x"}, "content": {"late"}, "expected_version": {"0"}})
	if code != http.StatusNotFound || !strings.Contains(flashOf(body), "The key for ws/beta was revoked") {
		t.Errorf("POST into ws/beta after its key was revoked: %d, flash %q; want 404 saying the key was revoked", code, flashOf(body))
	}
	if _, err := u.get(betaKey, "x"); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("the write after the revocation landed: %v", err)
	}
	if _, body := b.get("/"); flashOf(body) != "" {
		t.Errorf("the revocation is told twice: flash %q", flashOf(body))
	}
	if got := b.overviewProjects(); !slices.Equal(got, []string{"ws/proj"}) {
		t.Errorf("after the revocation the overview lists %v, want ws/proj only", got)
	}
	if code, _ := b.get("/w/ws/p/beta"); code != http.StatusNotFound {
		t.Errorf("ws/beta after its key was revoked: %d, want 404", code)
	}
	if code, _ := b.get(projPath); code != http.StatusOK {
		t.Errorf("ws/proj after the other key was revoked: %d, want 200", code)
	}
	if err := u.env.Svc.RevokeKey(context.Background(), u.writerKey.ID); err != nil {
		t.Fatal(err)
	}
	if code, _ := b.get(projPath); code != http.StatusSeeOther {
		t.Errorf("after the last key was revoked: %d, want 303 to sign in", code)
	}
}

// TestServerAdminSessionStaysAlone: a server-admin key joins no session of
// project keys, and a server-admin session takes no other key.
func TestServerAdminSessionStaysAlone(t *testing.T) {
	w := newRoleWorld(t)
	b := w.u.signIn(t, w.alphaAdmin)
	code, body := b.addKey(w.server)
	if code != http.StatusBadRequest || !strings.Contains(body, "server-admin key, which is used alone") {
		t.Errorf("add a server-admin key to a project session: %d %q", code, errorText(body))
	}
	if got := b.overviewProjects(); !slices.Equal(got, []string{"acme/alpha"}) {
		t.Errorf("after the refusal: %v", got)
	}
	s := w.u.signIn(t, w.server)
	code, body = s.addKey(w.gammaAdmin)
	if code != http.StatusBadRequest || !strings.Contains(body, "server-admin key, which is used alone") {
		t.Errorf("add a project key to a server-admin session: %d %q", code, errorText(body))
	}
	if _, body := s.get("/"); strings.Contains(body, `id="add-key-form"`) || !strings.Contains(body, `href="/w/acme/p/alpha/settings"`) {
		t.Error("the server-admin overview offers to add a key, or lost its projects")
	}
	if code, _ := s.get("/search?q=plan"); code != http.StatusForbidden {
		t.Errorf("server admin searches memory: %d, want 403", code)
	}
	resp, body := w.u.browser(t).do("POST", "/login", url.Values{"key": {w.alphaAdmin + "," + w.server}})
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "key 2 of 2 is a server-admin key") {
		t.Errorf("sign in with a project key and a server-admin key: %d %q", resp.StatusCode, errorText(body))
	}
}

// TestRemoveKeyFromSession: a key can leave the session again; the last
// one cannot (sign out instead), nor one the session does not hold.
func TestRemoveKeyFromSession(t *testing.T) {
	u := newUI(t)
	beta, betaKey := u.newKey(t, ws, "beta", "beta-bot", memory.RoleWrite)
	b := u.signIn(t, u.writer)
	if code, _ := b.addKey(beta); code != http.StatusSeeOther {
		t.Fatalf("add key: %d", code)
	}
	if code, _ := b.post("/session/keys/"+itoa(u.adminKey.ID)+"/remove", nil); code != http.StatusNotFound {
		t.Errorf("remove a key the session does not hold: %d, want 404", code)
	}
	if code, _ := b.post("/session/keys/"+itoa(u.writerKey.ID)+"/remove", nil); code != http.StatusSeeOther {
		t.Fatalf("remove the first key: %d", code)
	}
	b.refreshCSRF() // the session moved to a new id and token
	_, body := b.get("/")
	if !strings.Contains(flashOf(body), "Removed the key of alice (write, ws/proj)") {
		t.Errorf("flash after removing: %q", flashOf(body))
	}
	if got := b.overviewProjects(); !slices.Equal(got, []string{"ws/beta"}) {
		t.Errorf("after removing ws/proj's key the overview lists %v", got)
	}
	if code, _ := b.get(projPath); code != http.StatusNotFound {
		t.Errorf("ws/proj after its key left the session: %d, want 404", code)
	}
	if code, body := b.post("/session/keys/"+itoa(betaKey.ID)+"/remove", nil); code != http.StatusBadRequest || !strings.Contains(body, "sign out instead") {
		t.Errorf("remove the only key: %d %q", code, errorText(body))
	}
	if _, err := u.env.Svc.Authenticate(context.Background(), u.writer); err != nil {
		t.Errorf("removing a key from a session revoked it: %v", err)
	}
}

// TestSessionHoldsAtMostMaxCallerKeys: a session takes keys of up to
// memory.MaxCallerKeys projects; the next is refused and changes nothing.
func TestSessionHoldsAtMostMaxCallerKeys(t *testing.T) {
	u := newUI(t)
	b := u.signIn(t, u.reader)
	for i := 1; i <= memory.MaxCallerKeys; i++ {
		token, _ := u.newKey(t, ws, "p"+strconv.Itoa(i), "bot", memory.RoleRead)
		code, body := b.addKey(token)
		if i < memory.MaxCallerKeys && code != http.StatusSeeOther {
			t.Fatalf("add key %d: %d %q", i+1, code, errorText(body))
		}
		if i == memory.MaxCallerKeys && (code != http.StatusBadRequest || !strings.Contains(body, "at most 16 keys")) {
			t.Errorf("add key %d: %d %q; want 400 naming the limit", i+1, code, errorText(body))
		}
	}
	if got := b.overviewProjects(); len(got) != memory.MaxCallerKeys {
		t.Errorf("the session reaches %d projects, want %d", len(got), memory.MaxCallerKeys)
	}
}

// TestKeysPageOfSeveralAdminKeys: with admin keys of two projects the keys
// page lists the keys of both and creates and revokes keys in either,
// through the service; a project whose admin key the session lacks stays
// out of reach.
func TestKeysPageOfSeveralAdminKeys(t *testing.T) {
	w := newRoleWorld(t)
	_, third := w.u.newKey(t, "third", "t", "outsider", memory.RoleWrite)
	b := w.u.signIn(t, w.alphaAdmin)
	if code, _ := b.addKey(w.gammaAdmin); code != http.StatusSeeOther {
		t.Fatalf("add gamma's admin key: %d", code)
	}
	code, body := b.get("/keys")
	if code != http.StatusOK || !strings.Contains(body, ">gus<") || !strings.Contains(body, ">alice<") || !strings.Contains(body, ">gamma-bot<") {
		t.Fatalf("keys page: %d, want the keys of both projects:\n%s", code, body)
	}
	if strings.Contains(body, "outsider") || !strings.Contains(body, `<select name="target" id="key-target">`) {
		t.Error("the keys page shows a key of a third project, or offers no project select")
	}
	code, body = b.post("/keys", url.Values{"target": {"other/gamma"}, "agent": {"new-gamma-bot"}, "role": {"read"}})
	m := regexpToken.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("create a key of other/gamma: %d %q", code, errorText(body))
	}
	c, err := w.u.env.Svc.Authenticate(context.Background(), m[1])
	if err != nil || c.First().Project != w.gamma.ref {
		t.Errorf("the created key: %+v %v; want a key of other/gamma", c.First(), err)
	}
	if code, _ := b.post("/keys/"+itoa(c.First().ID)+"/revoke", nil); code != http.StatusSeeOther {
		t.Errorf("revoke a key of other/gamma: %d", code)
	}
	if code, _ := b.post("/keys/"+itoa(third.ID)+"/revoke", nil); code != http.StatusNotFound {
		t.Errorf("revoke a key of a project without an admin key: %d, want 404", code)
	}
	if code, _ := b.post("/keys", url.Values{"target": {"third/t"}, "agent": {"x"}, "role": {"read"}}); code != http.StatusNotFound {
		t.Errorf("create a key of a project without an admin key: %d, want 404", code)
	}
	if _, err := w.u.env.Svc.Authenticate(context.Background(), w.gammaAdmin); err != nil {
		t.Errorf("gamma's admin key: %v", err)
	}
	// Settings follow the key for each project: a read key of a third
	// project opens no settings there.
	readThird, _ := w.u.newKey(t, "third", "t", "reader", memory.RoleRead)
	if code, _ := b.addKey(readThird); code != http.StatusSeeOther {
		t.Fatal("add the third project's read key")
	}
	for path, want := range map[string]int{"/w/acme/p/alpha/settings": 200, "/w/other/p/gamma/settings": 200, "/w/third/p/t/settings": 403} {
		if code, _ := b.get(path); code != want {
			t.Errorf("GET %s: %d, want %d", path, code, want)
		}
	}
	if _, body := b.get("/w/third/p/t"); strings.Contains(body, `id="tab-settings"`) || !strings.Contains(body, `id="nav-keys"`) {
		t.Error("the read key's project shows a Settings tab, or the Keys link (the session administers other projects) is gone")
	}
}

// lockedBuffer collects log lines written from many goroutines.
type lockedBuffer = logtest.Buffer

// TestNoKeyInAnyPageOrLog: a two-key session, refused keys and key lists
// included: no token appears in a page, a header, the request log's
// caller or the server's log.
func TestNoKeyInAnyPageOrLog(t *testing.T) {
	u := newUI(t)
	var logs lockedBuffer
	h, err := New(u.env.Svc, Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), Now: u.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var callers []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, info := reqlog.With(r.Context())
		h.ServeHTTP(w, r.WithContext(ctx))
		mu.Lock()
		callers = append(callers, info.Agent+" "+info.Project)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	u.srv = srv
	beta, betaKey := u.newKey(t, ws, "beta", "beta-bot", memory.RoleAdmin)
	u.remember(t, u.writerKey, "a", "alpha text")
	u.remember(t, betaKey, "a", "beta text")
	tokens := []string{u.admin, beta}

	var pages []string
	record := func(resp *http.Response, body string) {
		var hdr strings.Builder
		_ = resp.Header.Write(&hdr)
		pages = append(pages, hdr.String()+body)
	}
	b := u.signIn(t, u.admin)
	for _, key := range []string{beta, beta + ",munin_nope", "munin_nope," + beta, beta + "x"} {
		resp, body := b.do("POST", "/session/keys", url.Values{"key": {key}, "csrf": {b.csrf}})
		record(resp, body)
	}
	resp, body := u.browser(t).do("POST", "/login", url.Values{"key": {u.admin + "," + beta + "," + beta + "x"}})
	record(resp, body)
	for _, path := range []string{"/", "/search?q=text", projPath, projPath + "/e/a", projPath + "/audit", projPath + "/searches",
		projPath + "/settings", "/w/ws/p/beta", "/w/ws/p/beta/e/a", "/w/ws/p/beta/settings", "/keys", "/w/ws/p/nope"} {
		resp, body := b.do("GET", path, nil)
		if resp.StatusCode >= 500 {
			t.Errorf("GET %s: %d", path, resp.StatusCode)
		}
		record(resp, body)
	}
	if got := b.overviewProjects(); !slices.Equal(got, []string{"ws/beta", "ws/proj"}) {
		t.Fatalf("the session reaches %v, want ws/beta and ws/proj", got)
	}
	mu.Lock()
	logged := logs.String() + strings.Join(callers, "\n")
	mu.Unlock()
	for _, token := range tokens {
		secret := strings.TrimPrefix(token, memory.KeyPrefix)
		for _, p := range pages {
			if strings.Contains(p, secret) {
				t.Fatalf("a page shows a key:\n%s", p)
			}
		}
		if strings.Contains(logged, secret) {
			t.Fatalf("the log shows a key:\n%s", logged)
		}
	}
	if !strings.Contains(logged, "root ws/proj,ws/beta") {
		t.Errorf("the request log does not name the two-key caller:\n%s", logged)
	}
}

// TestConcurrentPagesWhileAKeyIsRevoked: many requests of one two-key
// session run while the second key is revoked: each answers 200 or the 404
// of a project without a key, never an error; once the revocation is done,
// the project is out of reach for every request. Run with -race.
func TestConcurrentPagesWhileAKeyIsRevoked(t *testing.T) {
	u := newUI(t)
	beta, betaKey := u.newKey(t, ws, "beta", "beta-bot", memory.RoleWrite)
	u.remember(t, betaKey, "a", "beta text")
	b := u.signIn(t, u.reader)
	if code, _ := b.addKey(beta); code != http.StatusSeeOther {
		t.Fatalf("add key: %d", code)
	}
	cookies := b.c.Jar.Cookies(mustURL(t, u.srv.URL))
	const workers, rounds = 8, 20
	var wg sync.WaitGroup
	errs := make(chan string, workers*rounds)
	revoked := make(chan struct{})
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range rounds {
				if i == 0 && j == rounds/2 {
					if err := u.env.Svc.RevokeKey(context.Background(), betaKey.ID); err != nil {
						errs <- err.Error()
					}
					close(revoked)
				}
				path := []string{"/w/ws/p/beta/e/a", "/", projPath}[j%3]
				req, _ := http.NewRequest("GET", u.srv.URL+path, nil)
				for _, c := range cookies {
					req.AddCookie(c)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- err.Error()
					continue
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
					errs <- path + ": " + strconv.Itoa(resp.StatusCode)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	<-revoked
	if code, body := b.get("/w/ws/p/beta/e/a"); code != http.StatusNotFound || strings.Contains(body, "beta text") {
		t.Errorf("after the revocation: %d, want 404 without content", code)
	}
	if code, _ := b.get(projPath); code != http.StatusOK {
		t.Errorf("the first key after the revocation: %d", code)
	}
}

// TestTwoKeySessionCannotReachAThirdProject: a session with the admin key
// of acme/alpha and a write key of a third project still gets, on every
// route aimed at other/gamma, exactly the answer for a missing project, and
// changes nothing there.
func TestTwoKeySessionCannotReachAThirdProject(t *testing.T) {
	w := newRoleWorld(t)
	third, _ := w.u.newKey(t, "third", "t", "third-bot", memory.RoleWrite)
	b := w.u.signIn(t, w.alphaAdmin)
	if code, _ := b.addKey(third); code != http.StatusSeeOther {
		t.Fatalf("add key: %d", code)
	}
	b.get("/") // takes the flash of adding
	for _, r := range projectRoutes {
		if r.tmpl == "/keys" && r.method == "GET" {
			continue // not aimed at a project
		}
		code, body := b.send(r, w.gamma)
		_, missing := b.send(r, w.nope)
		missing = strings.ReplaceAll(missing, w.nope.ref.Project, w.gamma.ref.Project)
		missing = strings.ReplaceAll(missing, itoa(w.nope.keyID), itoa(w.gamma.keyID))
		if code != http.StatusNotFound || body != missing || strings.Contains(body, "gamma's") {
			t.Errorf("%s %s: %d, want the 404 of a missing project\n got: %s\nwant: %s", r.method, r.path(w.gamma), code, errorText(body), errorText(missing))
		}
	}
	if _, body := b.get("/search?q=secret"); strings.Contains(body, "gamma") {
		t.Error("the search across the session's projects shows other/gamma")
	}
	w.gammaUntouched(t)
}

// TestRevokedKeyIsToldOnTheNextPage: after a key of the session is
// revoked, the next page (a GET) says so once.
func TestRevokedKeyIsToldOnTheNextPage(t *testing.T) {
	u := newUI(t)
	beta, betaKey := u.newKey(t, ws, "beta", "beta-bot", memory.RoleRead)
	b := u.signIn(t, u.writer)
	if code, _ := b.addKey(beta); code != http.StatusSeeOther {
		t.Fatalf("add key: %d", code)
	}
	b.get("/") // takes the flash of adding
	if err := u.env.Svc.RevokeKey(context.Background(), betaKey.ID); err != nil {
		t.Fatal(err)
	}
	code, body := b.get(projPath)
	if code != http.StatusOK || flashOf(body) != "The key for ws/beta was revoked; it is no longer part of this session." {
		t.Errorf("the next page: %d, flash %q", code, flashOf(body))
	}
	if _, body := b.get(projPath); flashOf(body) != "" {
		t.Errorf("told twice: %q", flashOf(body))
	}
}
