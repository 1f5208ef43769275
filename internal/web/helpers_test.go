package web

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// clock is a movable time for session expiry tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// ui is the web UI over the real stack (SQLite, bleve, service) in a temp dir.
type ui struct {
	env   *servicetest.Env
	h     *Handler
	srv   *httptest.Server
	clock *clock
	// seen lists the requests the server got, for tests of what a page
	// makes a browser fetch.
	seen *requestLog
	// admin is an admin key of ws/proj; writer a write key, reader a read key.
	admin, writer, reader        string
	adminKey, writerKey, readKey memory.Key
}

var (
	ws   = "ws"
	proj = "proj"
	ref  = memory.ProjectRef{Workspace: ws, Project: proj}
)

func newUI(t testing.TB) *ui {
	t.Helper()
	return newUIOn(t, servicetest.New(t, service.Options{}))
}

// newUIOn is newUI over a stack built by the caller.
func newUIOn(t testing.TB, env *servicetest.Env) *ui {
	t.Helper()
	u := &ui{env: env, clock: &clock{t: time.Now()}, seen: &requestLog{}}
	var c memory.Caller
	u.admin, c = env.Key(t, ws, proj, "root", memory.RoleAdmin)
	u.adminKey = c.First()
	u.writer, c = env.Key(t, ws, proj, "alice", memory.RoleWrite)
	u.writerKey = c.First()
	u.reader, c = env.Key(t, ws, proj, "bob", memory.RoleRead)
	u.readKey = c.First()
	h, err := New(env.Svc, Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now:    u.clock.now,
	})
	if err != nil {
		t.Fatal(err)
	}
	u.h = h
	u.srv = httptest.NewServer(u.seen.wrap(h))
	t.Cleanup(u.srv.Close)
	// Open project pages hold live streams, and Close waits for every
	// request: end the streams first (cleanups run last in, first out).
	t.Cleanup(h.streams.Close)
	return u
}

// remember writes an entry through the service into key's project, as an
// agent holding key would.
func (u *ui) remember(t testing.TB, key memory.Key, slug, content string, tags ...string) service.WriteResult {
	t.Helper()
	res, err := u.env.Svc.Remember(context.Background(), memory.NewCaller(key), service.RememberRequest{Slug: slug, Content: content, Tags: tags})
	if err != nil {
		t.Fatalf("remember %s: %v", slug, err)
	}
	return res
}

// history returns the versions of slug in key's project, newest first.
func (u *ui) history(key memory.Key, slug string) ([]memory.VersionInfo, error) {
	res, err := u.env.Svc.History(context.Background(), memory.NewCaller(key), service.HistoryRequest{Slug: slug, Limit: memory.MaxHistoryLimit})
	return res.Versions, err
}

// get returns the latest version of slug in key's project.
func (u *ui) get(key memory.Key, slug string) (service.Entry, error) {
	return u.env.Svc.Get(context.Background(), memory.NewCaller(key), service.GetRequest{Slug: slug})
}

// recall searches key's project as an agent holding key would (logged).
func (u *ui) recall(t testing.TB, key memory.Key, query string) []service.Hit {
	t.Helper()
	res, err := u.env.Svc.Recall(context.Background(), memory.NewCaller(key), service.RecallRequest{Query: query})
	if err != nil {
		t.Fatalf("recall %q: %v", query, err)
	}
	return res.Hits
}

// searchLog returns the search-log rows of key's project.
func (u *ui) searchLog(key memory.Key) ([]memory.SearchRow, error) {
	return u.env.Svc.SearchLog(context.Background(), memory.NewCaller(key), key.Project, memory.LogFilter{Limit: 100})
}

// versions returns how many versions slug has in ws/proj (0: none).
func (u *ui) versions(t testing.TB, slug string) int {
	t.Helper()
	h, err := u.history(u.adminKey, slug)
	if memory.ErrorCode(err) == memory.CodeNotFound {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return len(h)
}

// browser is an HTTP client with a cookie jar that does not follow redirects.
type browser struct {
	t    testing.TB
	u    *ui
	c    *http.Client
	csrf string
}

func (u *ui) browser(t testing.TB) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, u: u, c: &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// signIn posts the key and remembers the session's CSRF token.
func (u *ui) signIn(t testing.TB, token string) *browser {
	t.Helper()
	b := u.browser(t)
	resp, _ := b.do("POST", "/login", url.Values{"key": {token}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: status %d", resp.StatusCode)
	}
	_, body := b.get("/")
	m := csrfRe.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token on the overview:\n%s", body)
	}
	b.csrf = m[1]
	return b
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *browser) do(method, path string, form url.Values, hdr ...string) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.u.srv.URL+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, string(out)
}

func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	resp, body := b.do("GET", path, nil)
	return resp.StatusCode, body
}

// post submits a form with the session's CSRF token added.
func (b *browser) post(path string, form url.Values) (int, string) {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", b.csrf)
	}
	resp, body := b.do("POST", path, form)
	return resp.StatusCode, body
}

const projPath = "/w/ws/p/proj"

var regexpToken = regexp.MustCompile(`<code id="token">(munin_[A-Za-z0-9_-]+)</code>`)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// requestLog records the method and URI of every request a handler serves.
type requestLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *requestLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.reqs = append(l.reqs, r.Method+" "+r.URL.RequestURI())
		l.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// take returns the requests recorded so far and forgets them.
func (l *requestLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.reqs
	l.reqs = nil
	return out
}
