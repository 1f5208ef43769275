package web

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"munin/internal/memory"
	"munin/internal/service"
)

// activeID is the id of the element that has the keyboard focus.
func activeID(t *testing.T, ctx context.Context) string {
	t.Helper()
	return value(t, ctx, "focused element", chromedp.Evaluate[string](`document.activeElement ? document.activeElement.id : ''`))
}

// TestBrowserReviewQueueByKeyboard: an admin works through the review queue
// with the keyboard alone. The queue focuses its first proposal, Enter opens
// it, its Approve button has the focus, Enter approves and the queue opens
// again with one less; the next is rejected by typing a reason, Tab to
// Reject, Enter.
func TestBrowserReviewQueueByKeyboard(t *testing.T) {
	ctx := newChrome(t)
	w := newReviewWorld(t)
	w.remember(t, w.writerKey, "decisions/db", "# Database\n\nWe use SQLite.\n")
	w.propose(t, w.scoutKey, service.RememberRequest{Slug: "decisions/db", Content: "# Database\n\nWe use SQLite in WAL mode.\n"})
	w.propose(t, w.scoutKey, service.RememberRequest{Slug: "notes/idea", Content: "Keep a changelog."})
	base := w.srv.URL
	signInBrowser(t, ctx, base, w.admin)

	run(t, ctx, "open project", chromedp.Navigate(base+projPath), chromedp.WaitVisible("#entries"))
	if got := textOf(t, ctx, "#pending-count"); got != "2" {
		t.Errorf("pending count in the tabs %q, want 2", got)
	}
	run(t, ctx, "open queue", chromedp.Click("#tab-review"), chromedp.WaitVisible("#proposals"))
	if n := count(t, ctx, "tr.proposal-row"); n != 2 {
		t.Fatalf("the queue lists %d proposals, want 2", n)
	}
	if got := activeID(t, ctx); got != "first-proposal" {
		t.Fatalf("focus on the queue is %q, want the first proposal", got)
	}
	run(t, ctx, "open the first proposal with Enter", chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible("#diff"))
	if got := textOf(t, ctx, "#proposal-title"); !strings.Contains(got, "notes/idea") {
		t.Errorf("Enter opened %q, want the newest proposal, notes/idea", got)
	}
	if got := activeID(t, ctx); got != "approve" {
		t.Fatalf("focus on the proposal is %q, want Approve", got)
	}
	if got := flashAfter(t, ctx, "approve with Enter", chromedp.KeyEvent(kb.Enter)); !strings.HasPrefix(got, "Approved proposal ws.proj.") {
		t.Errorf("after approving: %q", got)
	}
	if got := textOf(t, ctx, "#pending-count"); got != "1" {
		t.Errorf("pending count after approving %q, want 1", got)
	}
	if e, err := w.get(w.readKey, "notes/idea"); err != nil || e.Version != 1 || e.Agent != "scout" {
		t.Errorf("notes/idea after approval: %+v, %v", e, err)
	}

	run(t, ctx, "open the next proposal", chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible("#diff"))
	if del, add := textOf(t, ctx, "#diff tr.del"), textOf(t, ctx, "#diff tr.add"); !strings.Contains(del, "We use SQLite.") || !strings.Contains(add, "in WAL mode") {
		t.Errorf("diff against the current version: removed %q, added %q", del, add)
	}
	run(t, ctx, "type a reason", chromedp.Focus("#reason"), chromedp.KeyEvent("Say why WAL."), chromedp.KeyEvent(kb.Tab))
	if got := activeID(t, ctx); got != "reject" {
		t.Fatalf("Tab from the reason goes to %q, want Reject", got)
	}
	if got := flashAfter(t, ctx, "reject with Enter", chromedp.KeyEvent(kb.Enter)); !strings.HasPrefix(got, "Rejected proposal") {
		t.Errorf("after rejecting: %q", got)
	}
	if n := count(t, ctx, "tr.proposal-row"); n != 0 {
		t.Errorf("%d proposals left in the queue, want 0", n)
	}
	ps, err := w.env.Svc.Proposals(context.Background(), w.adminAsOne, service.ProposalsRequest{State: memory.ProposalRejected})
	if err != nil || len(ps.Proposals) != 1 || ps.Proposals[0].Slug != "decisions/db" || ps.Proposals[0].Reason != "Say why WAL." {
		t.Errorf("rejected proposals: %+v, %v", ps.Proposals, err)
	}
	if v := w.versions(t, "decisions/db"); v != 1 {
		t.Errorf("decisions/db has %d versions after the rejection, want 1", v)
	}
}

// screenshotProposals fills TestScreenshot's project with proposals of the
// kinds the queue marks — a change, a likely duplicate, a supersession, one
// whose entry moved on — and returns the number of the last, whose page
// (base, current and proposed side by side) the second shot shows.
func screenshotProposals(t *testing.T, u *ui) string {
	t.Helper()
	_, c := u.env.Key(t, ws, proj, "research-agent", memory.RolePropose)
	scout := c.First()
	_, c = u.env.Key(t, ws, proj, "docs-agent", memory.RolePropose)
	docs := c.First()
	w := &reviewWorld{ui: u, adminAsOne: memory.NewCaller(u.adminKey)}
	stale := w.propose(t, docs, service.RememberRequest{Slug: "people/ada", Content: "# Ada owns storage\n\nAsk her about migrations and backups."})
	u.remember(t, u.writerKey, "people/ada", "# Ada owns storage\n\nAsk her about migrations.\n\nShe is away in December.", "team")
	w.propose(t, scout, service.RememberRequest{Slug: "notes/load-test-2026-12", Content: "# Load test results, December\n\nGroup commit keeps up with 32 agents.",
		Tags: []string{"perf"}, Supersedes: []string{"notes/load-test-2026-11"}})
	w.propose(t, scout, service.RememberRequest{Slug: "runbooks/backups", Content: "# Backups\n\nCopy the workspace files with the backup command."})
	w.propose(t, docs, service.RememberRequest{Slug: "decisions/db-choice", Tags: []string{"db", "arch"},
		Content: "# We use SQLite in WAL mode\n\nOne writer connection per workspace file.\n\nWrites are batched: group commit.\n\nUpdated after review."})
	return stale
}
