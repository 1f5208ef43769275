package web

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"munin/internal/memory"
)

// chromiumPath finds Debian's Chromium, or skips the test (fails it with
// MUNIN_REQUIRE_BROWSER=1, see noBrowser).
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	noBrowser(t)
	return ""
}

// newChrome opens a tab with a fresh browser context in the shared headless
// Chromium; confirm dialogs are accepted as a person clicking OK would.
func newChrome(t *testing.T) context.Context {
	t.Helper()
	flowsOff(t)
	return newLiveChrome(t)
}

// newLiveChrome is newChrome for a test that watches the server change
// while the page is open: it runs even when flowsEnv is off.
func newLiveChrome(t *testing.T) context.Context {
	t.Helper()
	bctx, cancel := startChrome(t)
	ctx, cancelTimeout := context.WithTimeout(bctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancel() })
	dialogs := chromedp.Events(bctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			_, _ = chromedp.Call(bctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	return ctx
}

// One Chromium serves every browser test of the package (starting one took
// 1.3 s, twice the work of most tests): each test gets a tab in a browser
// context of its own, with its own cookies and storage, disposed of when
// the test ends. TestMain stops the browser.
var chrome struct {
	sync.Mutex
	ctx  context.Context // the browser's first tab; nil until started
	stop context.CancelFunc
}

// TestMain stops the shared Chromium once the tests are done.
func TestMain(m *testing.M) {
	code := m.Run()
	stopChrome()
	os.Exit(code)
}

func stopChrome() {
	chrome.Lock()
	defer chrome.Unlock()
	if chrome.stop != nil {
		chrome.stop()
		chrome.ctx, chrome.stop = nil, nil
	}
}

// startChrome opens a tab in a fresh browser context of the shared
// Chromium, starting the browser first if it is not running (or no longer
// answers). It tries up to three times: on a loaded machine Chromium now
// and then exits before it prints its DevTools address ("chrome failed to
// start"), and a fresh process with a fresh profile then starts fine.
// Three failures in a row fail the test.
func startChrome(t *testing.T) (context.Context, context.CancelFunc) {
	t.Helper()
	path := chromiumPath(t)
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		var browser context.Context
		if browser, err = runningChrome(path); err == nil {
			tab, closeTab := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
			// The first call opens the tab and binds its life to tab, so
			// it must not carry the test's timeout.
			if err = chromedp.Do(tab); err == nil {
				return tab, closeTab
			}
			closeTab()
			stopChrome() // start a new one on the next attempt
		}
		t.Logf("start chromium, attempt %d: %v", attempt, err)
	}
	t.Fatalf("start chromium: %v", err)
	return nil, nil
}

// runningChrome returns the shared Chromium's first tab, starting it with
// a fresh profile if needed. The flags keep it off the (closed) network.
func runningChrome(path string) (context.Context, error) {
	chrome.Lock()
	defer chrome.Unlock()
	if chrome.ctx != nil {
		return chrome.ctx, nil
	}
	profile, err := os.MkdirTemp("", "munin-chromium-")
	if err != nil {
		return nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelCtx := chromedp.NewContext(actx)
	stop := func() { cancelCtx(); cancelAlloc(); os.RemoveAll(profile) }
	if err := chromedp.Do(bctx); err != nil {
		stop()
		return nil, err
	}
	chrome.ctx, chrome.stop = bctx, stop
	return bctx, nil
}

// run runs browser actions and fails the test with the step's name.
func run(t *testing.T, ctx context.Context, step string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		t.Fatalf("%s: %v (at %s)", step, err, loc)
	}
}

// value runs one browser action that returns a value.
func value[T any](t *testing.T, ctx context.Context, step string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	return v
}

// textOf reads the text of the first node matching sel.
func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return value(t, ctx, "read "+sel, chromedp.Text(sel))
}

// count counts the nodes matching sel, without waiting for them.
func count(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	return value(t, ctx, "count "+sel, chromedp.Evaluate[int](`document.querySelectorAll(`+jsString(sel)+`).length`))
}

func jsString(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// flashAfter runs actions that submit a form and returns the flash message of
// the page they lead to. The old page is marked first, so a flash still shown
// on it is never mistaken for the answer.
func flashAfter(t *testing.T, ctx context.Context, step string, actions ...chromedp.Action[chromedp.Void]) string {
	t.Helper()
	run(t, ctx, step+" (mark page)", chromedp.Evaluate[chromedp.Void](`window.muninOldPage = true`))
	run(t, ctx, step, actions...)
	const expr = `(!window.muninOldPage && document.readyState === 'complete' && document.querySelector('#flash')) ? document.querySelector('#flash').textContent : ''`
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		// Evaluating during a navigation may fail; the next try sees the new page.
		if got, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr)); err == nil && got != "" {
			return textOf(t, ctx, "#flash")
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: no new page with a flash message within 30 s", step)
	return ""
}

// signInBrowser signs in through the form.
func signInBrowser(t *testing.T, ctx context.Context, base, token string) {
	t.Helper()
	run(t, ctx, "open sign-in page",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible("#key"),
		chromedp.SetValue("#key", token))
	flashAfter(t, ctx, "sign in", chromedp.Click("#signin"))
}

func TestBrowserFlow(t *testing.T) {
	ctx := newChrome(t)
	u := newUI(t)
	u.remember(t, u.writerKey, "decisions/db", "# Database\n\nWe use SQLite.\nWrites go through one connection.\n", "db")
	u.remember(t, u.writerKey, "decisions/db", "# Database\n\nWe use SQLite in WAL mode.\nWrites go through one connection.\n", "db")
	u.remember(t, u.writerKey, "notes/other", "Something else entirely.")
	base := u.srv.URL

	signInBrowser(t, ctx, base, u.admin)
	if got := textOf(t, ctx, "#flash"); !strings.Contains(got, "Signed in as root") {
		t.Errorf("flash after sign-in: %q", got)
	}

	// Browse: overview → project.
	run(t, ctx, "open project",
		chromedp.Click(`a.project-link[href="/w/ws/p/proj"]`),
		chromedp.WaitVisible("#entries"))
	if n := count(t, ctx, "tr.entry-row"); n != 2 {
		t.Errorf("project page lists %d entries, want 2", n)
	}

	// Search: ranked hits with highlighted matches.
	run(t, ctx, "search",
		chromedp.SetValue("#q", "wal"),
		chromedp.Click("#search-btn"),
		chromedp.WaitVisible("#hits"))
	if got := textOf(t, ctx, "#hits .snippet mark"); !strings.EqualFold(got, "wal") {
		t.Errorf("highlighted match %q, want WAL", got)
	}

	// Open the entry and diff its two versions.
	run(t, ctx, "open entry",
		chromedp.Click("a.hit-title"),
		chromedp.WaitVisible("#content"))
	if got := textOf(t, ctx, "#content"); !strings.Contains(got, "We use SQLite in WAL mode.") {
		t.Errorf("entry content %q", got)
	}
	if got := textOf(t, ctx, "#content h1"); got != "Database" {
		t.Errorf("Markdown heading rendered as %q", got)
	}
	run(t, ctx, "diff",
		chromedp.SetValue("#diff-from", "1"),
		chromedp.SetValue("#diff-to", "2"),
		chromedp.Click("#diff-btn"),
		chromedp.WaitVisible("#diff"))
	if del, add := textOf(t, ctx, "#diff tr.del"), textOf(t, ctx, "#diff tr.add"); !strings.Contains(del, "We use SQLite.") || !strings.Contains(add, "in WAL mode") {
		t.Errorf("diff: removed %q, added %q", del, add)
	}

	// Create, edit, restore, forget.
	run(t, ctx, "new entry",
		chromedp.Navigate(base+projPath),
		chromedp.Click("#new-entry"),
		chromedp.WaitVisible("#edit-form"),
		chromedp.SetValue("#slug", "people/ada"),
		chromedp.SetValue("#title", "Ada"),
		chromedp.SetValue("#tags", "people, team"),
		chromedp.SetValue("#content", "Ada owns the **storage** layer."))
	if got := flashAfter(t, ctx, "save new entry", chromedp.Click("#save")); got != "Saved people/ada as version 1." {
		t.Errorf("after create: %q", got)
	}
	if got := textOf(t, ctx, "#content strong"); got != "storage" {
		t.Errorf("bold text %q", got)
	}
	run(t, ctx, "edit",
		chromedp.Click("#edit"),
		chromedp.WaitVisible("#edit-form"),
		chromedp.SetValue("#content", "Ada owns the storage and search layers."))
	if got := flashAfter(t, ctx, "save edit", chromedp.Click("#save")); got != "Saved people/ada as version 2." {
		t.Errorf("after edit: %q", got)
	}
	run(t, ctx, "restore",
		chromedp.Navigate(base+projPath+"/e/people/ada?version=1"),
		chromedp.WaitVisible("#old-version"))
	if got := flashAfter(t, ctx, "restore version 1", chromedp.Click("#restore-shown")); got != "Restored version 1 as version 3." {
		t.Errorf("after restore: %q", got)
	}
	if got := textOf(t, ctx, "#content"); got != "Ada owns the storage layer." {
		t.Errorf("restored content %q", got)
	}
	if got := flashAfter(t, ctx, "forget", chromedp.Click("#forget")); !strings.HasPrefix(got, "Forgot people/ada") {
		t.Errorf("after forget: %q", got)
	}
	if n := count(t, ctx, "tr.entry-row"); n != 2 {
		t.Errorf("after forget the project lists %d entries, want 2", n)
	}
	if n := u.versions(t, "people/ada"); n != 4 {
		t.Errorf("people/ada has %d versions, want 4", n)
	}

	// Keys: create (shown once), revoke.
	run(t, ctx, "create key",
		chromedp.Click("#nav-keys"),
		chromedp.WaitVisible("#create-key"),
		chromedp.SetValue("#key-agent", "ci-bot"),
		chromedp.SetValue("#key-role", "read"),
		chromedp.Click("#create-key-btn"),
		chromedp.WaitVisible("#token"))
	token := textOf(t, ctx, "#token")
	c, err := u.env.Svc.Authenticate(context.Background(), token)
	key := c.First()
	if err != nil || key.Agent != "ci-bot" || key.Role != "read" {
		t.Fatalf("created key %q: %+v, %v", token, key, err)
	}
	row := `tr.key-row[data-key-id="` + itoa(key.ID) + `"]`
	flashAfter(t, ctx, "revoke key", chromedp.Click(row+" button.revoke"))
	run(t, ctx, "revoked", chromedp.WaitVisible(row+" .revoked-label"))
	if _, err := u.env.Svc.Authenticate(context.Background(), token); err == nil {
		t.Error("the revoked key still authenticates")
	}

	run(t, ctx, "sign out",
		chromedp.Click("#logout"),
		chromedp.WaitVisible("#key"))
	run(t, ctx, "signed out", chromedp.Navigate(base+projPath), chromedp.WaitVisible("#key"))
}

func TestBrowserHostileContentInert(t *testing.T) {
	ctx := newChrome(t)
	u := newUI(t)
	u.rememberOverMCP(t, u.writer, "notes/xss", xssContent)
	signInBrowser(t, ctx, u.srv.URL, u.reader)
	run(t, ctx, "open hostile entry",
		chromedp.Navigate(u.srv.URL+projPath+"/e/notes/xss"),
		chromedp.WaitVisible("#content"))
	// Click everything in the memory, the link included, as a curious person would.
	value(t, ctx, "click content", chromedp.Evaluate[int](`(() => {
		const els = Array.from(document.querySelectorAll('#content, #content *'));
		els.forEach(e => typeof e.click === 'function' ? e.click() : e.dispatchEvent(new MouseEvent('click', {bubbles: true})));
		return els.length; })()`))
	run(t, ctx, "settle", chromedp.Sleep(300*time.Millisecond))
	pwned := value(t, ctx, "check", chromedp.Evaluate[string](`typeof window.__pwned`))
	loc := value(t, ctx, "location", chromedp.Location())
	if pwned != "undefined" {
		t.Errorf("hostile content ran script: window.__pwned is %s", pwned)
	}
	if !strings.HasSuffix(loc, "/e/notes/xss") {
		t.Errorf("clicking the content navigated to %s", loc)
	}
	if n := count(t, ctx, "#content img, #content script, #content iframe, #content svg, #content a[href^='javascript']"); n != 0 {
		t.Errorf("%d active elements in the rendered memory", n)
	}
	if !strings.Contains(textOf(t, ctx, "#content"), "click me") {
		t.Error("the link text is gone; it should stay as inert text")
	}
	// A read key gets no edit forms.
	if n := count(t, ctx, "#edit, #forget, #new-entry, form[action*='/restore/']"); n != 0 {
		t.Errorf("read key sees %d edit controls", n)
	}
}

// TestScreenshot renders, in Chromium, the main pages of a small,
// realistic project — the entry list, a search (with a typo), an entry and a diff of two
// of its versions, the review queue and one proposal, the keys page — at
// 1280 and 390 px (a laptop and a phone) into docs/screens/NAME-WIDTH.png,
// and the README's docs/project-page.png, docs/search-all.png,
// docs/review-queue.png and docs/review-proposal.png (tests run in their
// package's directory, hence ../../docs). It runs only with
// MUNIN_SCREENSHOT=1:
// MUNIN_SCREENSHOT=1 go test -run TestScreenshot ./internal/web/
func TestScreenshot(t *testing.T) {
	if os.Getenv("MUNIN_SCREENSHOT") == "" {
		t.Skip("set MUNIN_SCREENSHOT=1 to write docs/screens/*.png and the README's screenshots")
	}
	ctx := newChrome(t)
	u := newUI(t)
	_, c := u.env.Key(t, ws, proj, "planner", "write")
	planner := c.First()
	_, c = u.env.Key(t, ws, proj, "reviewer", "write")
	reviewer := c.First()
	ops, opsKey := u.newKey(t, ws, "ops", "oncall", memory.RoleWrite)
	for i, e := range []struct {
		key        memory.Key
		slug, text string
		tags       []string
	}{
		{u.writerKey, "decisions/db-choice", "# We use SQLite in WAL mode\n\nOne writer connection per workspace file.", []string{"db", "arch"}},
		{planner, "decisions/search-engine", "# bleve for full-text search\n\nOne index per project, built lazily.", []string{"search", "arch"}},
		{reviewer, "conventions/errors", "# One error type with a code\n\nMapped once to HTTP and once to MCP.", []string{"go", "style"}},
		{u.writerKey, "runbooks/backup", "# Backups\n\nCopy the workspace files with the backup command.", []string{"ops"}},
		{planner, "notes/load-test-2026-11", "# Load test results, November\n\nGroup commit keeps up with 16 agents.", []string{"perf"}},
		{reviewer, "people/ada", "# Ada owns storage\n\nAsk her about migrations.", []string{"team"}},
		{u.writerKey, "decisions/auth", "# Keys, not passwords\n\nOne key per agent, stored as SHA-256.", []string{"security", "arch"}},
		{planner, "todo/web-ui", "# Web UI for people\n\nBrowse, search, curate.", []string{"ui"}},
		{opsKey, "runbooks/restore", "# Restore from a backup\n\nStop the server, copy the backup of the workspace file back, start.", []string{"ops"}},
		{opsKey, "incidents/2026-11-disk", "# Disk full on the build host\n\nThe nightly backup filled the disk; backups now rotate after 7 days.", []string{"ops", "incident"}},
	} {
		u.remember(t, e.key, e.slug, e.text, e.tags...)
		if i%3 == 0 {
			u.remember(t, e.key, e.slug, e.text+"\n\nUpdated after review.", e.tags...)
		}
	}
	signInBrowser(t, ctx, u.srv.URL, u.admin)
	run(t, ctx, "add a key", chromedp.SetValue("#add-key-input", ops))
	flashAfter(t, ctx, "add key", chromedp.Click("#add-key-btn"))
	shoot(t, ctx, u, []shot{
		{"../../docs/project-page.png", projPath, "#entries", 1200, 0},
		{"../../docs/search-all.png", "/search?q=backup", "#hits", 1200, 0},
	})
	n := screenshotProposals(t, u)
	shoot(t, ctx, u, []shot{
		{"../../docs/review-queue.png", projPath + "/review", "#proposals", 1200, 0},
		// Base, current and proposed side by side, and the diff below.
		{"../../docs/review-proposal.png", projPath + "/review/" + n, "#diff", 1200, 820},
	})
	if err := os.MkdirAll("../../docs/screens", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, width := range []int64{1280, 390} {
		var shots []shot
		for _, p := range []struct{ name, path, wait string }{
			{"project", projPath, "#entries"},
			{"search", projPath + "?q=bakup", "#hits"}, // a typo: the hits say how they matched
			{"search-all", "/search?q=backup", "#hits"},
			{"entry", projPath + "/e/decisions/db-choice", "#content"},
			{"diff", projPath + "/e/decisions/db-choice?diff=1..2", "#diff"},
			{"review", projPath + "/review", "#proposals"},
			{"proposal", projPath + "/review/" + n, "#diff"},
			{"keys", "/keys", "#create-key"},
		} {
			shots = append(shots, shot{fmt.Sprintf("../../docs/screens/%s-%d.png", p.name, width), p.path, p.wait, width, 0})
		}
		shoot(t, ctx, u, shots)
	}
}

// shot is a screenshot of the page at path, once wait is visible, width
// pixels wide and height high (0: 640 on a laptop, 844 on a phone).
type shot struct {
	file, path, wait string
	width, height    int64
}

// shoot navigates to each page and writes its screenshot, of the viewport
// only (a page's full length would make large files).
func shoot(t *testing.T, ctx context.Context, u *ui, shots []shot) {
	t.Helper()
	for _, s := range shots {
		height := s.height
		if height == 0 {
			height = 640
			if s.width < 600 {
				height = 844
			}
		}
		run(t, ctx, s.path, chromedp.EmulateViewport(s.width, height), chromedp.Navigate(u.srv.URL+s.path), chromedp.WaitVisible(s.wait))
		png := value(t, ctx, "screenshot", chromedp.CaptureScreenshot())
		if err := os.WriteFile(s.file, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
