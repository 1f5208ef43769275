package service_test

import (
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// reviewEnv is a project acme/rev with an admin (rita), a write key (walt),
// a propose key (pia) and a read key (reed), and a project acme/other with
// an admin (otto).
type reviewEnv struct {
	env                         *servicetest.Env
	rita, walt, pia, reed, otto memory.Caller
}

var rev = memory.ProjectRef{Workspace: "acme", Project: "rev"}

func newReviewEnv(t *testing.T, opts service.Options) *reviewEnv {
	t.Helper()
	env := servicetest.New(t, opts)
	r := &reviewEnv{env: env}
	_, r.rita = env.Key(t, "acme", "rev", "rita", memory.RoleAdmin)
	_, r.walt = env.Key(t, "acme", "rev", "walt", memory.RoleWrite)
	_, r.pia = env.Key(t, "acme", "rev", "pia", memory.RolePropose)
	_, r.reed = env.Key(t, "acme", "rev", "reed", memory.RoleRead)
	_, r.otto = env.Key(t, "acme", "other", "otto", memory.RoleAdmin)
	return r
}

// proposeNote makes pia propose slug and checks the pending answer.
func (r *reviewEnv) proposeNote(t *testing.T, slug, content string) service.WriteResult {
	t.Helper()
	res, err := r.env.Svc.Remember(ctx, r.pia, service.RememberRequest{Slug: slug, Content: content})
	if err != nil {
		t.Fatalf("pia proposes %s: %v", slug, err)
	}
	if res.State != memory.ProposalPending || res.Proposal == "" || res.BaseVersion == nil || res.Version != 0 ||
		res.Project != rev.String() || res.CreatedAt.IsZero() {
		t.Fatalf("pia's remember answered %+v; want state pending, a proposal id, base_version, no version", res)
	}
	return res
}

// TestProposalIsSeenOnlyByItsProposer: a propose key's remember writes no
// version; others find nothing of it in recall, get or list; the
// proposer's own recall finds it first, marked pending.
func TestProposalIsSeenOnlyByItsProposer(t *testing.T) {
	r := newReviewEnv(t, service.Options{})
	if _, err := r.env.Svc.Remember(ctx, r.walt, service.RememberRequest{Slug: "other", Content: "a zeppelin manual"}); err != nil {
		t.Fatal(err)
	}
	res := r.proposeNote(t, "ideas/zeppelin", "the zeppelin hangar needs a new roof")
	if *res.BaseVersion != 0 {
		t.Errorf("base_version %d for a new slug, want 0", *res.BaseVersion)
	}
	for name, c := range map[string]memory.Caller{"rita": r.rita, "walt": r.walt, "reed": r.reed} {
		got, err := r.env.Svc.Recall(ctx, c, service.RecallRequest{Query: "zeppelin hangar"})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range got.Hits {
			if h.Slug == "ideas/zeppelin" || h.State != "" {
				t.Errorf("%s's recall returned %+v: another agent's pending proposal", name, h)
			}
		}
		if _, err := r.env.Svc.Get(ctx, c, service.GetRequest{Slug: "ideas/zeppelin"}); memory.ErrorCode(err) != memory.CodeNotFound {
			t.Errorf("%s gets the proposed slug: %v, want not_found", name, err)
		}
		list, _ := r.env.Svc.List(ctx, c, service.ListRequest{})
		if len(list.Entries) != 1 {
			t.Errorf("%s lists %+v, want only the written entry", name, list.Entries)
		}
	}
	got, err := r.env.Svc.Recall(ctx, r.pia, service.RecallRequest{Query: "hangar roof", Limit: 1})
	if err != nil || len(got.Hits) != 1 || got.Hits[0].Slug != "ideas/zeppelin" || got.Hits[0].State != memory.ProposalPending {
		t.Fatalf("pia's recall: %+v, %v; want its pending proposal first, within the limit", got.Hits, err)
	}
	if !strings.Contains(got.Hits[0].Snippet, "«hangar»") {
		t.Errorf("pending hit's snippet %q marks no match", got.Hits[0].Snippet)
	}
	if got, _ := r.env.Svc.Recall(ctx, r.pia, service.RecallRequest{Query: "bicycle"}); len(got.Hits) != 0 {
		t.Errorf("pia's recall of an unrelated word: %+v", got.Hits)
	}
	if _, err := r.env.Svc.Get(ctx, r.pia, service.GetRequest{Slug: "ideas/zeppelin"}); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("pia gets its proposed slug: %v; a proposal is no version", err)
	}
}

// TestApproveWritesTheProposersVersion: an admin's approval writes the
// next version with the proposer as its agent; the audit log names the
// reviewer; a second approval is a conflict and writes nothing.
func TestApproveWritesTheProposersVersion(t *testing.T) {
	r := newReviewEnv(t, service.Options{})
	if _, err := r.env.Svc.Remember(ctx, r.walt, service.RememberRequest{Slug: "db", Content: "we use postgres"}); err != nil {
		t.Fatal(err)
	}
	res := r.proposeNote(t, "db", "we use sqlite")
	if *res.BaseVersion != 1 {
		t.Errorf("base_version %d, want 1", *res.BaseVersion)
	}
	out, err := r.env.Svc.Approve(ctx, r.rita, res.Proposal, service.ApproveRequest{})
	if err != nil || out.Version != 2 || out.Proposal != res.Proposal {
		t.Fatalf("approve: %+v, %v; want version 2", out, err)
	}
	e, err := r.env.Svc.Get(ctx, r.reed, service.GetRequest{Slug: "db"})
	if err != nil || e.Version != 2 || e.Agent != "pia" || e.Content != "we use sqlite" {
		t.Errorf("reed reads %+v, %v; want pia's approved version 2", e, err)
	}
	hits, _ := r.env.Svc.Recall(ctx, r.reed, service.RecallRequest{Query: "sqlite"})
	if len(hits.Hits) != 1 || hits.Hits[0].Version != 2 {
		t.Errorf("recall after the approval: %+v; want version 2 (read-your-writes)", hits.Hits)
	}
	rows, err := r.env.Svc.AuditLog(ctx, r.rita, rev, memory.LogFilter{Limit: 5})
	if err != nil || len(rows) == 0 || rows[0].Action != "approve" || rows[0].Agent != "rita" || rows[0].Version != 2 {
		t.Errorf("audit rows %+v, %v; want approve by rita first", rows, err)
	}
	if _, err := r.env.Svc.Approve(ctx, r.rita, res.Proposal, service.ApproveRequest{}); memory.ErrorCode(err) != memory.CodeConflict {
		t.Errorf("approve twice: %v, want conflict", err)
	}
	if h, _ := r.env.Svc.History(ctx, r.rita, service.HistoryRequest{Slug: "db"}); len(h.Versions) != 2 {
		t.Errorf("history after two approvals: %+v, want 2 versions", h.Versions)
	}
}

// TestRejectKeepsTheReason: a rejected proposal stays, with its reason,
// visible to its proposer and listed under rejected; no version is written.
func TestRejectKeepsTheReason(t *testing.T) {
	r := newReviewEnv(t, service.Options{})
	res := r.proposeNote(t, "x", "the earth is flat")
	if _, err := r.env.Svc.Reject(ctx, r.rita, res.Proposal, service.RejectRequest{Reason: " "}); memory.ErrorCode(err) != memory.CodeInvalid {
		t.Errorf("reject without a reason: %v, want invalid", err)
	}
	if _, err := r.env.Svc.Reject(ctx, r.rita, res.Proposal, service.RejectRequest{Reason: strings.Repeat("x", memory.MaxReason+1)}); memory.ErrorCode(err) != memory.CodeTooLarge {
		t.Errorf("reject with an over-long reason: %v, want too_large", err)
	}
	v, err := r.env.Svc.Reject(ctx, r.rita, res.Proposal, service.RejectRequest{Reason: "contradicts decisions/geo"})
	if err != nil || v.State != memory.ProposalRejected || v.Reason != "contradicts decisions/geo" || v.DecidedBy != "rita" {
		t.Fatalf("reject: %+v, %v", v, err)
	}
	mine, err := r.env.Svc.Proposals(ctx, r.pia, service.ProposalsRequest{State: "rejected"})
	if err != nil || len(mine.Proposals) != 1 || mine.Proposals[0].Reason != "contradicts decisions/geo" {
		t.Errorf("pia's rejected proposals: %+v, %v", mine, err)
	}
	d, err := r.env.Svc.Proposal(ctx, r.pia, res.Proposal)
	if err != nil || d.Proposal.Reason != "contradicts decisions/geo" {
		t.Errorf("pia reads its rejected proposal: %+v, %v", d, err)
	}
	if _, err := r.env.Svc.Get(ctx, r.pia, service.GetRequest{Slug: "x"}); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("a rejected proposal wrote a version: %v", err)
	}
}

// TestWhoSeesAndDecidesProposals: listing shows an admin all of its
// project's proposals and anyone else only its own; approving and
// rejecting need an admin key of the proposal's project (a write key is
// forbidden, also with review on); an id of another project is not_found,
// as a missing one.
func TestWhoSeesAndDecidesProposals(t *testing.T) {
	r := newReviewEnv(t, service.Options{})
	if err := r.env.Svc.SetReview(ctx, r.walt, rev, memory.ReviewAgents); memory.ErrorCode(err) != memory.CodeForbidden {
		t.Errorf("a write key sets the review: %v, want forbidden", err)
	}
	if err := r.env.Svc.SetReview(ctx, r.rita, rev, memory.ReviewAgents); err != nil {
		t.Fatal(err)
	}
	pias := r.proposeNote(t, "a", "pia's note")
	walts, err := r.env.Svc.Remember(ctx, r.walt, service.RememberRequest{Slug: "b", Content: "walt's note"})
	if err != nil || walts.State != memory.ProposalPending {
		t.Fatalf("walt's remember with review on: %+v, %v; want a proposal", walts, err)
	}
	direct, err := r.env.Svc.Remember(ctx, r.rita, service.RememberRequest{Slug: "c", Content: "rita's note"})
	if err != nil || direct.Version != 1 || direct.State != "" {
		t.Errorf("rita's remember with review on: %+v, %v; want version 1", direct, err)
	}
	for _, c := range []struct {
		name   string
		caller memory.Caller
		want   int
	}{{"rita", r.rita, 2}, {"walt", r.walt, 1}, {"pia", r.pia, 1}, {"reed", r.reed, 0}} {
		got, err := r.env.Svc.Proposals(ctx, c.caller, service.ProposalsRequest{})
		if err != nil || len(got.Proposals) != c.want {
			t.Errorf("%s lists %d proposals, %v; want %d", c.name, len(got.Proposals), err, c.want)
		}
		n, err := r.env.Svc.PendingCount(ctx, c.caller, rev)
		if err != nil || n != c.want {
			t.Errorf("%s's pending count %d, %v; want %d", c.name, n, err, c.want)
		}
	}
	if _, err := r.env.Svc.Proposal(ctx, r.walt, pias.Proposal); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("walt reads pia's proposal: %v, want not_found", err)
	}
	if _, err := r.env.Svc.Approve(ctx, r.walt, pias.Proposal, service.ApproveRequest{}); memory.ErrorCode(err) != memory.CodeForbidden {
		t.Errorf("a write key approves with review on: %v, want forbidden", err)
	}
	if _, err := r.env.Svc.Reject(ctx, r.pia, pias.Proposal, service.RejectRequest{Reason: "no"}); memory.ErrorCode(err) != memory.CodeForbidden {
		t.Errorf("the proposer rejects: %v, want forbidden", err)
	}
	// Another project's admin: the same answer as for an id that does not exist.
	missing := service.ProposalID(rev, 999999)
	for what, f := range map[string]func(id string) error{
		"read": func(id string) error { _, err := r.env.Svc.Proposal(ctx, r.otto, id); return err },
		"approve": func(id string) error {
			_, err := r.env.Svc.Approve(ctx, r.otto, id, service.ApproveRequest{})
			return err
		},
		"reject": func(id string) error {
			_, err := r.env.Svc.Reject(ctx, r.otto, id, service.RejectRequest{Reason: "x"})
			return err
		},
	} {
		errOther, errMissing := f(pias.Proposal), f(missing)
		if memory.ErrorCode(errOther) != memory.CodeNotFound ||
			errOther.Error() != strings.ReplaceAll(errMissing.Error(), missing, pias.Proposal) {
			t.Errorf("%s another project's proposal: %v; a missing one: %v; want the same not_found", what, errOther, errMissing)
		}
	}
	// A missing id in rita's own project is not_found too.
	if _, err := r.env.Svc.Approve(ctx, r.rita, missing, service.ApproveRequest{}); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("approve a missing id: %v, want not_found", err)
	}
	if _, err := r.env.Svc.Approve(ctx, r.rita, walts.Proposal, service.ApproveRequest{}); err != nil {
		t.Errorf("rita approves walt's proposal: %v", err)
	}
}

// TestStaleBaseNeedsExpectedVersion: a proposal whose entry moved on
// cannot be approved blindly; the detail shows base and current side by
// side, and the approval with expected_version (and an edit) goes through.
func TestStaleBaseNeedsExpectedVersion(t *testing.T) {
	r := newReviewEnv(t, service.Options{})
	if _, err := r.env.Svc.Remember(ctx, r.walt, service.RememberRequest{Slug: "db", Content: "postgres"}); err != nil {
		t.Fatal(err)
	}
	res := r.proposeNote(t, "db", "sqlite")
	if _, err := r.env.Svc.Remember(ctx, r.walt, service.RememberRequest{Slug: "db", Content: "mysql"}); err != nil {
		t.Fatal(err)
	}
	_, err := r.env.Svc.Approve(ctx, r.rita, res.Proposal, service.ApproveRequest{})
	if memory.ErrorCode(err) != memory.CodeConflict || !strings.Contains(err.Error(), "expected_version 2") {
		t.Fatalf("blind approval: %v, want conflict asking for expected_version 2", err)
	}
	d, err := r.env.Svc.Proposal(ctx, r.rita, res.Proposal)
	if err != nil || d.Base == nil || d.Base.Content != "postgres" || d.Current == nil || d.Current.Content != "mysql" ||
		d.Proposal.Content != "sqlite" || d.Proposal.CurrentVersion != 2 {
		t.Fatalf("detail: %+v, %v; want base postgres, current mysql, proposed sqlite", d, err)
	}
	two := 2
	out, err := r.env.Svc.Approve(ctx, r.rita, res.Proposal, service.ApproveRequest{ExpectedVersion: &two, Content: "sqlite, not mysql"})
	if err != nil || out.Version != 3 {
		t.Fatalf("approve with expected_version 2: %+v, %v", out, err)
	}
	if e, _ := r.env.Svc.Get(ctx, r.reed, service.GetRequest{Slug: "db"}); e.Content != "sqlite, not mysql" || e.Agent != "pia" {
		t.Errorf("approved edit %+v", e)
	}
}

// TestPeopleWriteDirectly: in the web UI (Caller.AsPerson) a write key
// writes directly even with review on, and a propose key only reads.
func TestPeopleWriteDirectly(t *testing.T) {
	r := newReviewEnv(t, service.Options{})
	if err := r.env.Svc.SetReview(ctx, r.rita, rev, memory.ReviewAgents); err != nil {
		t.Fatal(err)
	}
	res, err := r.env.Svc.Remember(ctx, r.walt.AsPerson(), service.RememberRequest{Slug: "p", Content: "typed by a person"})
	if err != nil || res.Version != 1 || res.State != "" {
		t.Errorf("a person's write key with review on: %+v, %v; want version 1", res, err)
	}
	if _, err := r.env.Svc.Forget(ctx, r.walt.AsPerson(), service.ForgetRequest{Slug: "p"}); err != nil {
		t.Errorf("a person's forget: %v", err)
	}
	if _, err := r.env.Svc.Remember(ctx, r.pia.AsPerson(), service.RememberRequest{Slug: "q", Content: "x"}); memory.ErrorCode(err) != memory.CodeForbidden {
		t.Errorf("a person's propose key: %v, want forbidden", err)
	}
	if _, err := r.env.Svc.Remember(ctx, r.walt.AsPerson(), service.RememberRequest{Slug: "r", Content: "first"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.env.Svc.Remember(ctx, r.walt.AsPerson(), service.RememberRequest{Slug: "r", Content: "second"}); err != nil {
		t.Fatal(err)
	}
	if res, err := r.env.Svc.Restore(ctx, r.walt.AsPerson(), rev, "r", 1); err != nil || res.Version != 3 || res.State != "" {
		t.Errorf("a person's restore with review on: %+v, %v; want version 3", res, err)
	}
	if n, _ := r.env.Svc.PendingCount(ctx, r.rita, rev); n != 0 {
		t.Errorf("%d pending after people's writes, want 0", n)
	}
	if !r.walt.AsPerson().Person() || r.walt.Person() {
		t.Error("AsPerson marks a copy, not the caller it was called on")
	}
}

// TestBudgetCountsProposals: a proposal takes its write from the project's
// budget like a version; its approval takes none.
func TestBudgetCountsProposals(t *testing.T) {
	r := newReviewEnv(t, service.Options{DefaultWriteBudget: 2})
	a := r.proposeNote(t, "a", "one")
	r.proposeNote(t, "b", "two")
	if _, err := r.env.Svc.Remember(ctx, r.pia, service.RememberRequest{Slug: "c", Content: "three"}); memory.ErrorCode(err) != memory.CodeBudgetExhausted {
		t.Errorf("third proposal at a budget of 2: %v, want budget_exhausted", err)
	}
	if _, err := r.env.Svc.Approve(ctx, r.rita, a.Proposal, service.ApproveRequest{}); err != nil {
		t.Errorf("approval at a used-up budget: %v; an approval spends nothing", err)
	}
}

// TestProposalIdempotentRetry: a retry with the idempotency key answers the
// first proposal and proposes nothing more.
func TestProposalIdempotentRetry(t *testing.T) {
	r := newReviewEnv(t, service.Options{})
	req := service.RememberRequest{Slug: "a", Content: "x", IdempotencyKey: "retry-1"}
	first, err := r.env.Svc.Remember(ctx, r.pia, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := r.env.Svc.Remember(ctx, r.pia, req)
	if err != nil || again.Proposal != first.Proposal || again.State != memory.ProposalPending {
		t.Errorf("retry: %+v, %v; want %+v", again, err, first)
	}
	if n, _ := r.env.Svc.PendingCount(ctx, r.rita, rev); n != 1 {
		t.Errorf("%d pending after a retry, want 1", n)
	}
}

// TestProposalsRequestChecks: bad states, limits and cursors are invalid.
func TestProposalsRequestChecks(t *testing.T) {
	r := newReviewEnv(t, service.Options{})
	for _, req := range []service.ProposalsRequest{{State: "done"}, {Limit: -1}, {Limit: memory.MaxListLimit + 1}, {Cursor: "abc"}} {
		if _, err := r.env.Svc.Proposals(ctx, r.rita, req); memory.ErrorCode(err) != memory.CodeInvalid {
			t.Errorf("%+v: %v, want invalid", req, err)
		}
	}
	for range 3 {
		r.proposeNote(t, "s", "x")
	}
	page, err := r.env.Svc.Proposals(ctx, r.rita, service.ProposalsRequest{Limit: 2})
	if err != nil || len(page.Proposals) != 2 || page.NextCursor == "" {
		t.Fatalf("first page %+v, %v", page, err)
	}
	next, err := r.env.Svc.Proposals(ctx, r.rita, service.ProposalsRequest{Limit: 2, Cursor: page.NextCursor})
	if err != nil || len(next.Proposals) != 1 || next.NextCursor != "" {
		t.Errorf("second page %+v, %v", next, err)
	}
}

// TestProposedForget: a propose key's forget is a proposal too; approved,
// it writes the tombstone, by the proposer.
func TestProposedForget(t *testing.T) {
	r := newReviewEnv(t, service.Options{})
	if _, err := r.env.Svc.Remember(ctx, r.walt, service.RememberRequest{Slug: "old", Content: "outdated"}); err != nil {
		t.Fatal(err)
	}
	res, err := r.env.Svc.Forget(ctx, r.pia, service.ForgetRequest{Slug: "old"})
	if err != nil || res.State != memory.ProposalPending || res.Version != 0 || *res.BaseVersion != 1 {
		t.Fatalf("pia's forget: %+v, %v; want a pending proposal based on 1", res, err)
	}
	if _, err := r.env.Svc.Get(ctx, r.reed, service.GetRequest{Slug: "old"}); err != nil {
		t.Errorf("the entry is gone before the approval: %v", err)
	}
	d, err := r.env.Svc.Proposal(ctx, r.rita, res.Proposal)
	if err != nil || !d.Proposal.Deleted || d.Current == nil || d.Current.Content != "outdated" {
		t.Errorf("detail of a proposed forget: %+v, %v", d, err)
	}
	out, err := r.env.Svc.Approve(ctx, r.rita, res.Proposal, service.ApproveRequest{Content: "ignored for a forget"})
	if err != nil || out.Version != 2 {
		t.Fatalf("approve the forget: %+v, %v", out, err)
	}
	if _, err := r.env.Svc.Get(ctx, r.reed, service.GetRequest{Slug: "old"}); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("get after the approved forget: %v, want not_found", err)
	}
	if h, _ := r.env.Svc.History(ctx, r.reed, service.HistoryRequest{Slug: "old"}); len(h.Versions) != 2 || !h.Versions[0].Deleted || h.Versions[0].Agent != "pia" {
		t.Errorf("history %+v; want pia's tombstone on top", h.Versions)
	}
}

// TestSetReviewByServerAdmin: a server-admin key sets any project's review
// setting (the web UI's settings page, REST with a project named); the
// setting reads back, and an unknown setting is invalid.
func TestSetReviewByServerAdmin(t *testing.T) {
	r := newReviewEnv(t, service.Options{})
	_, server := r.env.ServerAdmin(t, "ops")
	if err := r.env.Svc.SetReview(ctx, server, rev, memory.ReviewAgents); err != nil {
		t.Fatal(err)
	}
	if got, err := r.env.Svc.ProjectReview(ctx, r.reed, rev); err != nil || got != memory.ReviewAgents {
		t.Errorf("review setting read by reed: %q, %v", got, err)
	}
	if err := r.env.Svc.SetReviewOf(ctx, server, "", memory.ReviewOff); memory.ErrorCode(err) != memory.CodeForbidden {
		t.Errorf("server admin without a project: %v, want forbidden", err)
	}
	if err := r.env.Svc.SetReviewOf(ctx, server, rev.String(), "sometimes"); memory.ErrorCode(err) != memory.CodeInvalid {
		t.Errorf("unknown setting: %v, want invalid", err)
	}
	if err := r.env.Svc.SetReviewOf(ctx, r.rita, "", memory.ReviewOff); err != nil {
		t.Errorf("rita resets her project's review: %v", err)
	}
	if got, _ := r.env.Svc.ProjectReview(ctx, r.rita, rev); got != memory.ReviewOff {
		t.Errorf("review after the reset: %q", got)
	}
}

// TestAuditLogKeepsProposalsPrivate: the audit log shows a proposal's
// propose row to its proposer and to admins only, and a rejection to
// admins only; the approval is a version like any other, seen by all.
func TestAuditLogKeepsProposalsPrivate(t *testing.T) {
	r := newReviewEnv(t, service.Options{})
	kept := r.proposeNote(t, "kept", "approved later")
	dropped := r.proposeNote(t, "dropped", "rejected later")
	r.proposeNote(t, "waiting", "still pending")
	if _, err := r.env.Svc.Approve(ctx, r.rita, kept.Proposal, service.ApproveRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.env.Svc.Reject(ctx, r.rita, dropped.Proposal, service.RejectRequest{Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	actions := func(c memory.Caller) string {
		t.Helper()
		rows, err := r.env.Svc.AuditLog(ctx, c, rev, memory.LogFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, row := range rows {
			out = append(out, row.Action+":"+row.Slug)
		}
		return strings.Join(out, " ")
	}
	if got, want := actions(r.rita), "reject:dropped approve:kept propose:waiting propose:dropped propose:kept"; got != want {
		t.Errorf("admin's audit log %q, want %q", got, want)
	}
	if got, want := actions(r.pia), "approve:kept propose:waiting propose:dropped propose:kept"; got != want {
		t.Errorf("proposer's audit log %q, want %q", got, want)
	}
	for name, c := range map[string]memory.Caller{"read": r.reed, "write": r.walt} {
		if got, want := actions(c), "approve:kept"; got != want {
			t.Errorf("%s key's audit log %q, want %q", name, got, want)
		}
	}
}

// TestProposalRetryWhenTheBudgetIsUsedUp: a retry of a proposal with its
// idempotency key is answered with the first proposal even when the
// project's write budget is used up (the retry writes nothing).
func TestProposalRetryWhenTheBudgetIsUsedUp(t *testing.T) {
	r := newReviewEnv(t, service.Options{DefaultWriteBudget: 1})
	req := service.RememberRequest{Slug: "a", Content: "one", IdempotencyKey: "k1"}
	first, err := r.env.Svc.Remember(ctx, r.pia, req)
	if err != nil || first.Proposal == "" {
		t.Fatalf("first proposal: %+v, %v", first, err)
	}
	again, err := r.env.Svc.Remember(ctx, r.pia, req)
	if err != nil || again.Proposal != first.Proposal || again.State != memory.ProposalPending {
		t.Fatalf("retry with the budget used up: %+v, %v; want proposal %s again", again, err, first.Proposal)
	}
	if _, err := r.env.Svc.Remember(ctx, r.pia, service.RememberRequest{Slug: "b", Content: "two"}); memory.ErrorCode(err) != memory.CodeBudgetExhausted {
		t.Errorf("a new proposal with the budget used up: %v, want budget_exhausted", err)
	}
}

// TestPeopleWithWriteKeysReview: a person in the web UI with a write key
// sees every pending proposal and approves and rejects them, as the
// issue lets people in the web UI do; the same key as an agent's is
// forbidden, and a person's propose or read key sees only its own.
func TestPeopleWithWriteKeysReview(t *testing.T) {
	r := newReviewEnv(t, service.Options{})
	a := r.proposeNote(t, "a", "one")
	b := r.proposeNote(t, "b", "two")
	if _, err := r.env.Svc.Approve(ctx, r.walt, a.Proposal, service.ApproveRequest{}); memory.ErrorCode(err) != memory.CodeForbidden {
		t.Fatalf("an agent's write key approves: %v, want forbidden", err)
	}
	person := r.walt.AsPerson()
	if n, err := r.env.Svc.PendingCount(ctx, person, rev); err != nil || n != 2 {
		t.Errorf("a person's write key counts %d pending, %v; want 2", n, err)
	}
	if _, err := r.env.Svc.Proposal(ctx, person, a.Proposal); err != nil {
		t.Errorf("a person's write key reads pia's proposal: %v", err)
	}
	if res, err := r.env.Svc.Approve(ctx, person, a.Proposal, service.ApproveRequest{}); err != nil || res.Version != 1 {
		t.Fatalf("a person's write key approves: %+v, %v; want version 1", res, err)
	}
	if _, err := r.env.Svc.Reject(ctx, person, b.Proposal, service.RejectRequest{Reason: "duplicate"}); err != nil {
		t.Fatalf("a person's write key rejects: %v", err)
	}
	c := r.proposeNote(t, "c", "three")
	for name, k := range map[string]memory.Caller{"propose": r.pia.AsPerson(), "read": r.reed.AsPerson()} {
		if _, err := r.env.Svc.Approve(ctx, k, c.Proposal, service.ApproveRequest{}); memory.ErrorCode(err) != memory.CodeForbidden &&
			memory.ErrorCode(err) != memory.CodeNotFound {
			t.Errorf("a person's %s key approves: %v, want forbidden", name, err)
		}
	}
	if _, err := r.env.Svc.Proposal(ctx, r.reed.AsPerson(), c.Proposal); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("a person's read key reads pia's proposal: %v, want not_found", err)
	}
}
