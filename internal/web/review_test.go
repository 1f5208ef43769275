package web

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
)

// reviewWorld is ws/proj with a propose key "scout" and helpers to make
// and read proposals.
type reviewWorld struct {
	*ui
	scout      string // token
	scoutKey   memory.Key
	adminAsOne memory.Caller
}

func newReviewWorld(t *testing.T) *reviewWorld {
	t.Helper()
	u := newUI(t)
	w := &reviewWorld{ui: u}
	var c memory.Caller
	w.scout, c = u.env.Key(t, ws, proj, "scout", memory.RolePropose)
	w.scoutKey = c.First()
	w.adminAsOne = memory.NewCaller(u.adminKey)
	return w
}

// propose writes slug as key's agent would (not as a person) and returns
// the proposal's number within the project.
func (w *reviewWorld) propose(t *testing.T, key memory.Key, req service.RememberRequest) string {
	t.Helper()
	res, err := w.env.Svc.Remember(context.Background(), memory.NewCaller(key), req)
	if err != nil || res.State != memory.ProposalPending {
		t.Fatalf("propose %s: %+v, %v; want a pending proposal", req.Slug, res, err)
	}
	_, n, err := service.ParseProposalID(res.Proposal)
	if err != nil {
		t.Fatal(err)
	}
	return itoa(n)
}

// proposal reads proposal n of ws/proj as the admin.
func (w *reviewWorld) proposal(t *testing.T, n string) service.ProposalView {
	t.Helper()
	d, err := w.env.Svc.Proposal(context.Background(), w.adminAsOne, ws+"."+proj+"."+n)
	if err != nil {
		t.Fatal(err)
	}
	return d.Proposal
}

// rowsOf returns the slugs of the proposal rows of a queue page, in order.
func rowsOf(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?s)<tr class="proposal-row[^"]*".*?<span class="slug">([^<]+)</span>`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestReviewQueueListsPendingNewestFirst: an admin's queue lists the pending
// proposals newest first, with proposer, base version and the marks for a
// likely duplicate and a supersession; the project tabs count them and link
// to the queue; the first proposal's link is focused.
func TestReviewQueueListsPendingNewestFirst(t *testing.T) {
	w := newReviewWorld(t)
	w.remember(t, w.writerKey, "decisions/db", "We use SQLite in WAL mode with one writer connection per workspace file.")
	w.remember(t, w.writerKey, "notes/old-plan", "The old plan.")
	w.propose(t, w.scoutKey, service.RememberRequest{Slug: "decisions/db", Content: "We use SQLite in WAL mode; group commit batches writes."})
	w.propose(t, w.scoutKey, service.RememberRequest{Slug: "notes/new-plan", Content: "The new plan.", Supersedes: []string{"notes/old-plan"}})
	w.propose(t, w.scoutKey, service.RememberRequest{Slug: "decisions/database", Content: "We use SQLite in WAL mode with one writer connection per workspace file."})

	b := w.signIn(t, w.admin)
	_, body := b.get(projPath)
	if !strings.Contains(body, `href="/w/ws/p/proj/review" id="tab-review"`) || !regexp.MustCompile(`id="pending-count">3<`).MatchString(body) {
		t.Fatalf("the project tabs lack the review link with 3 pending:\n%s", body)
	}
	code, body := b.get(projPath + "/review")
	if code != http.StatusOK {
		t.Fatalf("queue: %d %s", code, errorText(body))
	}
	if got, want := strings.Join(rowsOf(body), " "), "decisions/database notes/new-plan decisions/db"; got != want {
		t.Errorf("queue order %q, want newest first %q", got, want)
	}
	text := strings.Join(strings.Fields(body), " ")
	for _, want := range []string{
		`looks like a duplicate of <a href="/w/ws/p/proj/e/decisions/db">decisions/db</a>`,
		`supersedes <a href="/w/ws/p/proj/e/notes/old-plan">notes/old-plan</a>`,
		`<td class="agent">scout</td>`,
		`<td class="num">v1</td>`, // decisions/db's base
		`id="first-proposal" autofocus`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("queue lacks %s", want)
		}
	}
	if strings.Index(text, `id="first-proposal"`) > strings.Index(text, "decisions/database") {
		t.Error("the focused link is not the first proposal's")
	}
}

// TestApproveWritesTheProposalAsAVersion: the proposal page shows the diff
// against the current version and a focused Approve button; approving
// writes the next version under the proposer's name, audited as approved by
// the admin, and the proposal leaves the queue.
func TestApproveWritesTheProposalAsAVersion(t *testing.T) {
	w := newReviewWorld(t)
	w.remember(t, w.writerKey, "decisions/db", "# Database\n\nWe use SQLite.\n")
	n := w.propose(t, w.scoutKey, service.RememberRequest{Slug: "decisions/db", Content: "# Database\n\nWe use SQLite in WAL mode.\n"})
	b := w.signIn(t, w.admin)
	code, body := b.get(projPath + "/review/" + n)
	if code != http.StatusOK {
		t.Fatalf("proposal page: %d %s", code, errorText(body))
	}
	for _, want := range []string{`<tr class="del">`, "We use SQLite.", `<tr class="add">`, "We use SQLite in WAL mode.", `id="approve" accesskey="a" autofocus`, `name="expected_version" value="1"`} {
		if !strings.Contains(body, want) {
			t.Errorf("proposal page lacks %s", want)
		}
	}
	if strings.Contains(body, `id="stale-base"`) {
		t.Error("a proposal on the current version is marked stale")
	}
	code, _ = b.post(projPath+"/review/"+n+"/approve", url.Values{"expected_version": {"1"}})
	if code != http.StatusSeeOther {
		t.Fatalf("approve: %d", code)
	}
	got, err := w.get(w.readKey, "decisions/db")
	if err != nil || got.Version != 2 || got.Content != "# Database\n\nWe use SQLite in WAL mode.\n" || got.Agent != "scout" {
		t.Fatalf("after approval: %+v, %v; want version 2 with the proposed text by scout", got, err)
	}
	if p := w.proposal(t, n); p.State != memory.ProposalApproved || p.DecidedBy != "root" || p.Version != 2 {
		t.Errorf("proposal after approval: %+v", p)
	}
	_, body = b.get(projPath + "/review")
	if !strings.Contains(body, "Approved proposal ws.proj."+n+": decisions/db is now at version 2.") || !strings.Contains(body, `id="no-proposals"`) {
		t.Errorf("queue after approval lacks the flash or still lists the proposal:\n%s", body)
	}
	if _, body = b.get(projPath + "/audit"); !strings.Contains(body, `<tr class="audit-row approve">`) || !strings.Contains(body, `<td class="agent">root</td><td>approve</td>`) {
		t.Errorf("the audit log does not record root's approval")
	}
	// Approving again writes nothing more.
	if code, _ := b.post(projPath+"/review/"+n+"/approve", url.Values{"expected_version": {"2"}}); code != http.StatusConflict {
		t.Errorf("approve twice: %d, want 409", code)
	}
	if v := w.versions(t, "decisions/db"); v != 2 {
		t.Errorf("decisions/db has %d versions after a second approval, want 2", v)
	}
}

// TestEditThenApprove: the edit form is prefilled with the proposed text;
// what the reviewer saves is written.
func TestEditThenApprove(t *testing.T) {
	w := newReviewWorld(t)
	n := w.propose(t, w.scoutKey, service.RememberRequest{Slug: "people/ada", Title: "Ada", Content: "Ada owns storage.", Tags: []string{"team", "people"}})
	b := w.signIn(t, w.admin)
	code, body := b.get(projPath + "/review/" + n + "/edit")
	if code != http.StatusOK || !strings.Contains(body, ">Ada owns storage.</textarea>") || !strings.Contains(body, `value="Ada"`) || !strings.Contains(body, `value="team, people"`) {
		t.Fatalf("edit form (%d) is not prefilled with the proposal:\n%s", code, body)
	}
	code, body = b.post(projPath+"/review/"+n+"/approve", url.Values{"edited": {"1"}, "expected_version": {"0"},
		"title": {"Ada Lovelace"}, "tags": {"team"}, "content": {"Ada owns storage\r\nand search."}})
	if code != http.StatusSeeOther {
		t.Fatalf("edit then approve: %d %s", code, errorText(body))
	}
	got, err := w.get(w.readKey, "people/ada")
	if err != nil || got.Title != "Ada Lovelace" || got.Content != "Ada owns storage\nand search." || strings.Join(got.Tags, ",") != "team" {
		t.Errorf("after edit then approve: %+v, %v", got, err)
	}
	// A title the first line gave follows an edited first line.
	n = w.propose(t, w.scoutKey, service.RememberRequest{Slug: "people/cy", Content: "# Cy owns search\n\nAsk him."})
	if _, body := b.get(projPath + "/review/" + n + "/edit"); !strings.Contains(body, `name="title" value="" maxlength="512" placeholder="Cy owns search"`) {
		t.Errorf("a derived title is not left to derive again:\n%s", body)
	}
	if code, _ := b.post(projPath+"/review/"+n+"/approve", url.Values{"edited": {"1"}, "expected_version": {"0"}, "title": {""}, "content": {"# Cy owns search and ranking\n\nAsk him."}}); code != http.StatusSeeOther {
		t.Fatalf("edit then approve people/cy: %d", code)
	}
	if got, _ := w.get(w.readKey, "people/cy"); got.Title != "Cy owns search and ranking" {
		t.Errorf("the derived title after an edited first line: %q", got.Title)
	}
	// A refused edit keeps the typed text on the form.
	n = w.propose(t, w.scoutKey, service.RememberRequest{Slug: "people/bob", Content: "Bob."})
	code, body = b.post(projPath+"/review/"+n+"/approve", url.Values{"edited": {"1"}, "expected_version": {"0"}, "content": {"fine"}, "tags": {"Not A Tag!"}})
	if code != http.StatusBadRequest || !strings.Contains(body, `id="approve-edit-form"`) || !strings.Contains(body, ">fine</textarea>") {
		t.Errorf("a bad tag: %d, want 400 with the form and the typed text: %s", code, errorText(body))
	}
	if w.versions(t, "people/bob") != 0 {
		t.Error("a refused approval wrote a version")
	}
}

// TestRejectNeedsAReasonThatTheProposerReads: rejecting without a reason is
// refused and changes nothing; with one, the proposal is rejected and its
// proposer reads the reason on its own page, which has no buttons to decide.
func TestRejectNeedsAReasonThatTheProposerReads(t *testing.T) {
	w := newReviewWorld(t)
	n := w.propose(t, w.scoutKey, service.RememberRequest{Slug: "notes/idea", Content: "Rewrite it in Rust."})
	b := w.signIn(t, w.admin)
	code, body := b.post(projPath+"/review/"+n+"/reject", url.Values{"reason": {"  "}})
	if code != http.StatusBadRequest || !strings.Contains(errorText(body), "reason") || !strings.Contains(body, `id="reject-form"`) {
		t.Errorf("reject without a reason: %d %s", code, errorText(body))
	}
	if p := w.proposal(t, n); p.State != memory.ProposalPending {
		t.Fatalf("a refused rejection changed the proposal: %+v", p)
	}
	if code, _ := b.post(projPath+"/review/"+n+"/reject", url.Values{"reason": {"We stay with Go."}}); code != http.StatusSeeOther {
		t.Fatalf("reject: %d", code)
	}
	if p := w.proposal(t, n); p.State != memory.ProposalRejected || p.Reason != "We stay with Go." || p.DecidedBy != "root" {
		t.Errorf("after rejecting: %+v", p)
	}
	if w.versions(t, "notes/idea") != 0 {
		t.Error("a rejected proposal became a version")
	}

	s := w.signIn(t, w.scout)
	_, body = s.get(projPath)
	if !strings.Contains(body, `id="tab-review">My proposals</a>`) {
		t.Error("the proposer's tabs lack My proposals")
	}
	_, body = s.get(projPath + "/review?state=rejected")
	if !strings.Contains(body, "notes/idea") || !strings.Contains(body, "Reason: We stay with Go.") {
		t.Errorf("the proposer's rejected proposals lack the reason:\n%s", body)
	}
	code, body = s.get(projPath + "/review/" + n)
	if code != http.StatusOK || !strings.Contains(body, `id="reason-text">We stay with Go.<`) {
		t.Errorf("the proposer's proposal page (%d) lacks the reason", code)
	}
	for _, control := range []string{`id="approve"`, `id="reject"`, `id="edit-approve"`, "/approve", "/reject"} {
		if strings.Contains(body, control) {
			t.Errorf("the proposer sees %s", control)
		}
	}
}

// TestWriteKeyPersonApproves: where the project reviews agents' writes, a
// write key's agent proposes, and a person signed in with a write key
// decides like an admin (memory.Role.ReviewsAsPerson: a person writes
// directly anyway): the queue with its count, the buttons, the approval.
func TestWriteKeyPersonApproves(t *testing.T) {
	w := newReviewWorld(t)
	if err := w.env.Svc.SetReview(context.Background(), w.adminAsOne, ref, memory.ReviewAgents); err != nil {
		t.Fatal(err)
	}
	n := w.propose(t, w.writerKey, service.RememberRequest{Slug: "notes/mine", Content: "Alice's agent proposes."})
	b := w.signIn(t, w.writer)
	if _, body := b.get(projPath); !strings.Contains(body, `id="pending-count"`) {
		t.Error("a write key's tabs lack the pending count")
	}
	code, body := b.get(projPath + "/review/" + n)
	if code != http.StatusOK || !strings.Contains(body, "Alice&#39;s agent proposes.") {
		t.Fatalf("the proposal: %d %s", code, errorText(body))
	}
	for _, control := range []string{`id="approve"`, `id="reject"`, `id="edit-approve"`} {
		if !strings.Contains(body, control) {
			t.Errorf("a write key's person lacks %s", control)
		}
	}
	if code, body := b.post(projPath+"/review/"+n+"/approve", url.Values{"expected_version": {"0"}}); code >= 400 {
		t.Fatalf("approve: %d %s", code, errorText(body))
	}
	if p := w.proposal(t, n); p.State != memory.ProposalApproved || w.versions(t, "notes/mine") != 1 {
		t.Errorf("after the write key's approval: %+v, %d versions", p, w.versions(t, "notes/mine"))
	}
}

// TestProposeKeyCannotApprove: a person signed in with a propose key sees
// its own proposal without buttons, and every decision posted by hand is
// forbidden and changes nothing.
func TestProposeKeyCannotApprove(t *testing.T) {
	w := newReviewWorld(t)
	n := w.propose(t, w.scoutKey, service.RememberRequest{Slug: "notes/mine", Content: "The scout proposes."})
	b := w.signIn(t, w.scout)
	if _, body := b.get(projPath); !strings.Contains(body, `id="tab-review">My proposals</a>`) || strings.Contains(body, `id="pending-count"`) {
		t.Error("a propose key's tabs lack My proposals, or show the reviewers' count")
	}
	code, body := b.get(projPath + "/review/" + n)
	if code != http.StatusOK || !strings.Contains(body, "The scout proposes.") {
		t.Fatalf("the scout's own proposal: %d %s", code, errorText(body))
	}
	for _, control := range []string{`id="approve"`, `id="reject"`, `id="edit-approve"`} {
		if strings.Contains(body, control) {
			t.Errorf("a propose key sees %s", control)
		}
	}
	for _, post := range []struct{ path string }{{"/approve"}, {"/reject"}} {
		if code, body := b.post(projPath+"/review/"+n+post.path, url.Values{"expected_version": {"0"}, "reason": {"mine"}}); code != http.StatusForbidden || !strings.Contains(body, "admin key") {
			t.Errorf("propose key POST %s: %d %s, want 403 naming the admin key", post.path, code, errorText(body))
		}
	}
	if code, _ := b.get(projPath + "/review/" + n + "/edit"); code != http.StatusForbidden {
		t.Errorf("propose key opens the edit-then-approve form: %d, want 403", code)
	}
	if p := w.proposal(t, n); p.State != memory.ProposalPending || w.versions(t, "notes/mine") != 0 {
		t.Errorf("a propose key's decision changed something: %+v", p)
	}
}

// TestPeopleWriteDirectlyWhenReviewIsOn: with review on for agents, the
// same write key proposes through the service but writes a version when its
// person saves in the web UI.
func TestPeopleWriteDirectlyWhenReviewIsOn(t *testing.T) {
	w := newReviewWorld(t)
	if _, body := w.signIn(t, w.writer).get(projPath); !strings.Contains(body, `id="pending-count">0<`) {
		t.Error("with review off, a write key's tabs lack the queue of the propose keys' proposals")
	}
	a := w.signIn(t, w.admin)
	if code, _ := a.post(projPath+"/settings/review", url.Values{"review": {"agents"}}); code != http.StatusSeeOther {
		t.Fatalf("set review: %d", code)
	}
	if review, err := w.env.Svc.ProjectReview(context.Background(), w.adminAsOne, ref); err != nil || review != memory.ReviewAgents {
		t.Fatalf("review setting %q, %v; want agents", review, err)
	}
	if _, body := a.get(projPath + "/settings"); !strings.Contains(body, `id="review-agents" checked`) || !strings.Contains(body, `id="review-mode">on for agents<`) {
		t.Errorf("the settings page does not show review on")
	}
	w.propose(t, w.writerKey, service.RememberRequest{Slug: "by-agent", Content: "through the service"})
	b := w.signIn(t, w.writer)
	code, body := b.post(projPath+"/save", url.Values{"slug": {"by-person"}, "content": {"typed in the web UI"}, "expected_version": {"0"}, "is_new": {"1"}})
	if code != http.StatusSeeOther {
		t.Fatalf("save: %d %s", code, errorText(body))
	}
	if got, err := w.get(w.readKey, "by-person"); err != nil || got.Version != 1 {
		t.Errorf("the person's save: %+v, %v; want version 1", got, err)
	}
	if w.versions(t, "by-agent") != 0 {
		t.Error("the agent's write was not held for review")
	}
	if code, _ := a.post(projPath+"/settings/review", url.Values{"review": {"sometimes"}}); code != http.StatusBadRequest {
		t.Errorf("review=sometimes: %d, want 400", code)
	}
}

// TestStaleProposalShowsBaseCurrentAndProposed: when the entry moved past a
// proposal's base, the page says so and shows the three texts side by side;
// an approval from a page older than the entry's latest version is a
// conflict that writes nothing.
func TestStaleProposalShowsBaseCurrentAndProposed(t *testing.T) {
	w := newReviewWorld(t)
	w.remember(t, w.writerKey, "runbooks/backup", "Copy the files.")
	n := w.propose(t, w.scoutKey, service.RememberRequest{Slug: "runbooks/backup", Content: "Copy the files with the backup command."})
	w.remember(t, w.writerKey, "runbooks/backup", "Copy the files nightly.")
	b := w.signIn(t, w.admin)
	_, body := b.get(projPath + "/review")
	if !strings.Contains(body, `now v2</span>`) {
		t.Error("the queue does not mark the stale proposal")
	}
	code, body := b.get(projPath + "/review/" + n)
	if code != http.StatusOK {
		t.Fatalf("proposal page: %d", code)
	}
	for _, want := range []string{`id="stale-base"`, `id="text-base">Copy the files.<`, `id="text-current">Copy the files nightly.<`,
		`id="text-proposed">Copy the files with the backup command.<`, `name="expected_version" value="2"`, "Approve over version 2"} {
		if !strings.Contains(body, want) {
			t.Errorf("stale proposal page lacks %s", want)
		}
	}
	if strings.Contains(body, "autofocus") {
		t.Error("a stale proposal's Approve is focused: Enter would approve it without a look at the three texts")
	}
	if code, body := b.post(projPath+"/review/"+n+"/approve", url.Values{"expected_version": {"1"}}); code != http.StatusConflict || !strings.Contains(body, "changed since you opened") {
		t.Errorf("approve from an old page: %d %s, want 409", code, errorText(body))
	}
	if v := w.versions(t, "runbooks/backup"); v != 2 {
		t.Fatalf("%d versions after a refused approval, want 2", v)
	}
	if code, _ := b.post(projPath+"/review/"+n+"/approve", url.Values{"expected_version": {"2"}}); code != http.StatusSeeOther {
		t.Errorf("approve over version 2: %d", code)
	}
	if got, _ := w.get(w.readKey, "runbooks/backup"); got.Version != 3 || got.Content != "Copy the files with the backup command." {
		t.Errorf("after approving over version 2: %+v", got)
	}
}

// TestProposalOfAnotherProjectIsMissing: a proposal number of another
// project (or none) answers 404, as a missing one does.
func TestProposalOfAnotherProjectIsMissing(t *testing.T) {
	w := newReviewWorld(t)
	_, c := w.env.Key(t, ws, "beta", "beta-scout", memory.RolePropose)
	n := w.propose(t, c.First(), service.RememberRequest{Slug: "beta/secret", Content: "beta's secret"})
	b := w.signIn(t, w.admin)
	for _, path := range []string{"/review/" + n, "/review/" + n + "/edit", "/review/999"} {
		if code, body := b.get(projPath + path); code != http.StatusNotFound || strings.Contains(body, "secret") {
			t.Errorf("GET %s: %d, want 404 without beta's text", path, code)
		}
	}
	if code, _ := b.post(projPath+"/review/"+n+"/approve", url.Values{"expected_version": {"0"}}); code != http.StatusNotFound {
		t.Errorf("approve beta's proposal from proj: %d, want 404", code)
	}
}

// TestDecidedProposalsComeInPages: the rejected (and approved) proposals
// are not bounded as the pending queue is; they come in pages of 50, in
// the service's order, and the link to the next page shows the rest.
func TestDecidedProposalsComeInPages(t *testing.T) {
	w := newReviewWorld(t)
	ctx := context.Background()
	for i := range reviewPageSize + 1 {
		n := w.propose(t, w.scoutKey, service.RememberRequest{Slug: "n/" + itoa(int64(i)), Content: "idea " + itoa(int64(i))})
		if _, err := w.env.Svc.Reject(ctx, w.adminAsOne, ws+"."+proj+"."+n, service.RejectRequest{Reason: "no"}); err != nil {
			t.Fatal(err)
		}
	}
	b := w.signIn(t, w.scout)
	_, body := b.get(projPath + "/review?state=rejected")
	first := rowsOf(body)
	m := regexp.MustCompile(`id="next-proposals" href="([^"]+)"`).FindStringSubmatch(body)
	if len(first) != reviewPageSize || m == nil {
		t.Fatalf("first page: %d rows, next link %v", len(first), m != nil)
	}
	_, body = b.get(strings.ReplaceAll(m[1], "&amp;", "&"))
	rest := rowsOf(body)
	if len(rest) != 1 || rest[0] == first[0] || strings.Contains(body, `id="next-proposals"`) {
		t.Errorf("second page: %v, want the one proposal left and no next link", rest)
	}
}
