package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"munin/internal/memory"
	"munin/internal/service"
)

// The widths every page is checked at: a laptop, a phone (390 px, an
// iPhone 12 to 15) and the narrowest phone the layout is made for (360 px,
// many Android phones).
var screenWidths = []int64{1280, 390, 360}

// screenHeight is the viewport's height at every width: what is below it
// scrolls, which is allowed (only sideways scrolling of the page is not).
const screenHeight = 844

// screenPage is one page of the web UI that the layout, accessibility and
// screenshot tests load.
type screenPage struct {
	name    string // names the page in failures
	session string // who is signed in: sessionProject, sessionServer or "" (nobody)
	path    string
	wait    string // a selector visible once the page is there
	status  int    // the HTTP status the page answers with; 0 means 200
}

// The sessions the pages are seen in.
const (
	// sessionProject: the admin key of ws/proj (reads, writes, reviews,
	// manages keys) plus a write key of a second project, as a person
	// working on two projects signs in.
	sessionProject = "project"
	// sessionServer: a server-admin key, which sees the admin pages only.
	sessionServer = "server"
)

// screenWorld is a project with everything the pages show at their widest:
// a long slug, a Markdown table and a long code line, an entry with
// versions to diff, proposals (one stale, so base, current and proposed
// stand side by side), searches in the search log, entries in the audit
// log, and a second project in the session.
type screenWorld struct {
	*ui
	server   string // a server-admin token
	other    string // a write key of ws/notes, added to the session
	proposal string // number of the stale proposal
	longSlug string
}

// wideContent is Markdown that is wide at any screen: a table of seven
// columns, a code line of 150 characters and an unbroken URL.
const wideContent = "# Storage migration plan\n\n" +
	"| Step | Owner | Start | End | Risk | Rollback | Notes |\n|---|---|---|---|---|---|---|\n" +
	"| Copy the workspace files | ops-oncall-rotation | 2026-11-02 | 2026-11-03 | low | keep the old files for 30 days | checksums compared per file |\n" +
	"| Switch the readers | storage-team | 2026-11-04 | 2026-11-04 | medium | switch back by config | watch p99 of recall |\n\n" +
	"```\nlitestream replicate -config /etc/munin/litestream.yml /var/lib/munin/workspaces/engineering.sqlite s3://backups/munin/engineering/2026\n```\n\n" +
	"See https://example.com/a/very/long/address/that/does/not/break/anywhere/because/it/has/no/spaces/at/all/and-goes-on-and-on for details.\n"

// newScreenWorld fills ws/proj as described on screenWorld.
func newScreenWorld(t *testing.T) *screenWorld {
	t.Helper()
	u := newUI(t)
	w := &screenWorld{ui: u, longSlug: "architecture/decisions/2026/storage/why-we-keep-one-sqlite-file-per-workspace-and-stream-it-with-litestream"}
	w.server, _ = u.env.ServerAdmin(t, "ops")
	var c memory.Caller
	w.other, c = u.env.Key(t, ws, "notes", "alice-notes", memory.RoleWrite)
	u.remember(t, c.First(), "ideas/backup-drill", "# Backup drill\n\nRestore a backup once a month.", "ops")
	u.remember(t, u.writerKey, w.longSlug, wideContent, "storage", "architecture", "operations-and-on-call")
	u.remember(t, u.writerKey, w.longSlug, wideContent+"\nThe second version adds a line that is long enough to wrap on a phone: "+strings.Repeat("replication-", 12)+"done.\n",
		"storage", "architecture", "operations-and-on-call")
	u.remember(t, u.writerKey, "decisions/db", "# Database\n\nWe use SQLite.\n", "db")
	u.remember(t, u.writerKey, "decisions/db", "# Database\n\nWe use SQLite in WAL mode.\n", "db")
	u.remember(t, u.writerKey, "notes/other", "Something else entirely.")
	u.remember(t, u.writerKey, "notes/"+strings.Repeat("obsolete-", 8)+"plan", "# An obsolete plan\n\nForgotten.", "old")
	if _, err := u.env.Svc.Forget(context.Background(), memory.NewCaller(u.writerKey), service.ForgetRequest{Slug: "notes/" + strings.Repeat("obsolete-", 8) + "plan"}); err != nil {
		t.Fatal(err)
	}
	u.recall(t, u.writerKey, "sqlite wal")
	u.recall(t, u.writerKey, "a long query about "+strings.Repeat("replication ", 10))
	rw := &reviewWorld{ui: u, adminAsOne: memory.NewCaller(u.adminKey)}
	_, c = u.env.Key(t, ws, proj, "research-agent", memory.RolePropose)
	scout := c.First()
	w.proposal = rw.propose(t, scout, service.RememberRequest{Slug: "decisions/db", Content: "# Database\n\nWe use SQLite in WAL mode, " + strings.Repeat("with-one-writer-", 8) + ".\n"})
	u.remember(t, u.writerKey, "decisions/db", "# Database\n\nWe use SQLite in WAL mode.\n\nOne writer connection.\n", "db")
	rw.propose(t, scout, service.RememberRequest{Slug: "notes/idea", Content: "Keep a changelog."})
	return w
}

// screenPages lists every page of the web UI, in the order the tests visit
// them (grouped by session). The OAuth pages need a server with OAuth on
// and are checked by TestBrowserOAuthPagesFitThePhone.
func (w *screenWorld) screenPages() []screenPage {
	e := projPath + "/e/" + w.longSlug
	return []screenPage{
		{name: "sign-in", path: "/", wait: "#key"},
		{name: "overview", session: sessionProject, path: "/", wait: "#add-key-form"},
		{name: "search-all", session: sessionProject, path: "/search?q=backup", wait: "main"},
		{name: "project", session: sessionProject, path: projPath, wait: "#entries"},
		{name: "project-search", session: sessionProject, path: projPath + "?q=sqlite", wait: "#hits"},
		{name: "project-no-hits", session: sessionProject, path: projPath + "?q=quokka&tag=db", wait: "#no-hits"},
		{name: "search-all-no-hits", session: sessionProject, path: "/search?q=quokka", wait: "#no-hits"},
		{name: "entry", session: sessionProject, path: e, wait: "#content"},
		{name: "entry-old-version", session: sessionProject, path: e + "?version=1", wait: "#old-version"},
		{name: "entry-diff", session: sessionProject, path: e + "?diff=1..2", wait: "#diff"},
		{name: "edit", session: sessionProject, path: projPath + "/edit/" + w.longSlug, wait: "#edit-form"},
		{name: "new", session: sessionProject, path: projPath + "/new", wait: "#edit-form"},
		{name: "audit", session: sessionProject, path: projPath + "/audit", wait: "main table"},
		{name: "search-log", session: sessionProject, path: projPath + "/searches", wait: "main table"},
		{name: "settings", session: sessionProject, path: projPath + "/settings", wait: "#budget-form"},
		{name: "review", session: sessionProject, path: projPath + "/review", wait: "#proposals"},
		{name: "review-rejected", session: sessionProject, path: projPath + "/review?state=rejected", wait: "#proposals"},
		{name: "proposal", session: sessionProject, path: projPath + "/review/" + w.proposal, wait: "#diff"},
		{name: "approve", session: sessionProject, path: projPath + "/review/" + w.proposal + "/edit", wait: "#approve-edit-form"},
		{name: "keys", session: sessionProject, path: "/keys", wait: "#create-key"},
		{name: "forgotten", session: sessionProject, path: projPath + "/forgotten", wait: "#forgotten-entries"},
		{name: "error", session: sessionProject, path: projPath + "/e/no/such/entry", wait: "#error", status: http.StatusNotFound},
		{name: "server-overview", session: sessionServer, path: "/", wait: "main"},
		{name: "server-keys", session: sessionServer, path: "/keys", wait: "#create-key"},
		{name: "server-settings", session: sessionServer, path: projPath + "/settings", wait: "#budget-form"},
	}
}

// visitScreens loads each page in the browser, signed in as its session
// says, checks its status, and calls check on it. It signs in again only
// when the session changes.
func (w *screenWorld) visitScreens(t *testing.T, ctx context.Context, pages []screenPage, check func(p screenPage)) {
	t.Helper()
	current := "-"
	for _, p := range pages {
		if p.session != current {
			w.signInAs(t, ctx, p.session)
			current = p.session
		}
		resp := value(t, ctx, "open "+p.name, chromedp.NavigateResponse(w.srv.URL+p.path))
		want := p.status
		if want == 0 {
			want = http.StatusOK
		}
		if int(resp.Status) != want {
			t.Errorf("page %s (%s): status %d, want %d", p.name, p.path, resp.Status, want)
			continue
		}
		run(t, ctx, "wait for "+p.name, chromedp.WaitVisible(p.wait))
		check(p)
	}
}

// signInAs clears the browser's cookies and signs in as session.
func (w *screenWorld) signInAs(t *testing.T, ctx context.Context, session string) {
	t.Helper()
	if _, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
		t.Fatalf("clear cookies: %v", err)
	}
	switch session {
	case sessionProject:
		signInBrowser(t, ctx, w.srv.URL, w.admin)
		run(t, ctx, "add a key of a second project", chromedp.SetValue("#add-key-input", w.other))
		flashAfter(t, ctx, "add key", chromedp.Click("#add-key-btn"))
	case sessionServer:
		signInBrowser(t, ctx, w.srv.URL, w.server)
	}
}

// layoutProblems measures the page in the browser and returns what is
// wrong with its layout at this width: the document wider than the
// viewport (the page scrolls sideways), and on a phone Sign out outside
// the screen and touch targets lower than 44 px. It also returns the
// document's width.
const layoutProblems = `(() => {
  const vw = window.innerWidth, problems = [];
  const sw = document.documentElement.scrollWidth;
  if (sw > vw) {
    const wide = [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > vw + 1)
      .filter(e => !e.parentElement || e.parentElement.getBoundingClientRect().right <= vw + 1).slice(0, 3)
      .map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className && typeof e.className === 'string' ? '.' + e.className.trim().split(/\s+/).join('.') : ''));
    problems.push('the document is ' + sw + ' px wide in a ' + vw + ' px viewport (wider: ' + wide.join(', ') + ')');
  }
  if (vw < 600) {
    const out = document.querySelector('#logout');
    if (out) {
      const r = out.getBoundingClientRect();
      if (r.left < 0 || r.right > vw || r.width === 0) problems.push('Sign out is outside the screen (' + Math.round(r.left) + '..' + Math.round(r.right) + ')');
    }
    const targets = [...document.querySelectorAll('button, a.button, input[type=submit], header a, nav a, .pager a')];
    for (const e of targets) {
      const r = e.getBoundingClientRect();
      if (r.width === 0 || getComputedStyle(e).visibility === 'hidden') continue;
      if (r.height < 43.5) problems.push('touch target ' + e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + ' "' + e.textContent.trim().slice(0, 30) + '" is ' + Math.round(r.height) + ' px high');
    }
  }
  return {width: sw, problems: problems};
})()`

// layoutReport is what layoutProblems returns.
type layoutReport struct {
	Width    int      `json:"width"`
	Problems []string `json:"problems"`
}

// TestBrowserEveryPageFitsTheScreen loads every page of the UI at 1280 and
// 390 px and fails, naming page and width, when the page scrolls sideways,
// when Sign out is off the screen on a phone, or when a button or a link in
// a navigation is lower than 44 px there (issue 26, point 1).
func TestBrowserEveryPageFitsTheScreen(t *testing.T) {
	sweepsOff(t)
	ctx := newChrome(t)
	w := newScreenWorld(t)
	pages := w.screenPages()
	for _, width := range screenWidths {
		run(t, ctx, fmt.Sprintf("viewport %d", width), chromedp.EmulateViewport(width, screenHeight))
		w.visitScreens(t, ctx, pages, func(p screenPage) {
			r := value(t, ctx, "measure "+p.name, chromedp.Evaluate[layoutReport](layoutProblems))
			t.Logf("%4d px: %-18s document %d px wide", width, p.name, r.Width)
			for _, problem := range r.Problems {
				t.Errorf("page %s at %d px: %s", p.name, width, problem)
			}
		})
	}
}
