package store

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
)

// pctx is the context of the proposal tests.
var pctx = context.Background()

// propose appends a proposal of agent and fails the test on error.
func propose(t testing.TB, s *Store, ref memory.ProjectRef, agent, slug, content string) memory.WriteResult {
	t.Helper()
	res, err := s.Append(context.Background(), ref, memory.Write{Slug: slug, Title: "t " + slug, Content: content,
		Agent: agent, Review: memory.ProposeAlways})
	if err != nil {
		t.Fatalf("propose %s: %v", slug, err)
	}
	if res.Proposal == 0 || res.Version != 0 {
		t.Fatalf("propose %s: %+v, want a proposal and no version", slug, res)
	}
	return res
}

// TestProposalWritesNoVersion: a proposing write keeps its full content in
// the proposals table, with its base version and an audit row propose, and
// writes no version.
func TestProposalWritesNoVersion(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	put(t, s, ref, "a", "first")
	res := propose(t, s, ref, "pia", "a", "second, proposed")
	if res.BaseVersion != 1 || res.CreatedAt.IsZero() {
		t.Errorf("proposal answer %+v, want base 1 and a time", res)
	}
	if _, latest, err := s.Get(pctx, ref, "a", 0); err != nil || latest != 1 {
		t.Errorf("latest version after a proposal: %d, %v; want 1", latest, err)
	}
	p, cur, err := s.Proposal(pctx, ref, res.Proposal)
	if err != nil || p.Content != "second, proposed" || p.Agent != "pia" || p.BaseVersion != 1 || p.State != memory.ProposalPending || cur != 1 {
		t.Errorf("proposal read back: %+v (current %d), %v", p, cur, err)
	}
	rows, err := s.AuditRows(pctx, ref, memory.LogFilter{Limit: 10})
	if err != nil || len(rows) != 2 || rows[0].Action != actionPropose || rows[0].Version != 0 || rows[0].Agent != "pia" {
		t.Errorf("audit rows %+v, %v; want the propose row first", rows, err)
	}
}

// TestProposeIfReviewedFollowsTheSetting: a write key's write is a version
// while review is off and a proposal once it is agents.
func TestProposeIfReviewedFollowsTheSetting(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	w := memory.Write{Slug: "a", Title: "a", Content: "x", Agent: "w", Review: memory.ProposeIfReviewed}
	if res, err := s.Append(pctx, ref, w); err != nil || res.Version != 1 || res.Proposal != 0 {
		t.Fatalf("review off: %+v, %v; want version 1", res, err)
	}
	if err := s.SetReview(pctx, ref, memory.ReviewAgents); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Review(pctx, ref); err != nil || r != memory.ReviewAgents {
		t.Fatalf("review setting: %q, %v", r, err)
	}
	if res, err := s.Append(pctx, ref, w); err != nil || res.Version != 0 || res.Proposal == 0 || res.BaseVersion != 1 {
		t.Fatalf("review agents: %+v, %v; want a proposal based on 1", res, err)
	}
	if err := s.SetReview(pctx, ref, "everyone"); memory.ErrorCode(err) != memory.CodeInvalid {
		t.Errorf("unknown review setting: %v, want invalid", err)
	}
}

// TestProposalChecksLikeAWrite: expected_version and a forget of a missing
// or forgotten slug are refused as a direct write is, and nothing is proposed.
func TestProposalChecksLikeAWrite(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	put(t, s, ref, "a", "x")
	two := 2
	cases := []struct {
		name string
		w    memory.Write
		code memory.Code
	}{
		{"stale expected version", memory.Write{Slug: "a", Title: "a", Content: "y", ExpectedVersion: &two}, memory.CodeConflict},
		{"forget of a missing slug", memory.Write{Slug: "b", Deleted: true}, memory.CodeNotFound},
	}
	for _, c := range cases {
		c.w.Agent, c.w.Review = "pia", memory.ProposeAlways
		if _, err := s.Append(pctx, ref, c.w); memory.ErrorCode(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
	if _, err := s.Append(pctx, ref, memory.Write{Slug: "a", Deleted: true, Agent: "w"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(pctx, ref, memory.Write{Slug: "a", Deleted: true, Agent: "pia", Review: memory.ProposeAlways}); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("forget of a forgotten slug: %v, want not_found", err)
	}
	if n, err := s.PendingCount(pctx, ref); err != nil || n != 0 {
		t.Errorf("pending after refused proposals: %d, %v", n, err)
	}
}

// TestProposalIdempotency: a retry with the same idempotency key returns
// the first proposal and proposes nothing more.
func TestProposalIdempotency(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	w := memory.Write{Slug: "a", Title: "a", Content: "x", Agent: "pia", Review: memory.ProposeAlways, IdempotencyKey: "k1"}
	first, err := s.Append(pctx, ref, w)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Append(pctx, ref, w)
	if err != nil || !again.Replayed || again.Proposal != first.Proposal || again.BaseVersion != first.BaseVersion || again.Version != 0 {
		t.Errorf("retry: %+v, %v; want the first proposal %+v replayed", again, err, first)
	}
	if n, _ := s.PendingCount(pctx, ref); n != 1 {
		t.Errorf("%d pending after a retry, want 1", n)
	}
	// The same key on a direct write of the slug is another write.
	if res, err := s.Append(pctx, ref, memory.Write{Slug: "a", Title: "a", Content: "y", Agent: "w", IdempotencyKey: "k1"}); err != nil || res.Version != 1 {
		t.Errorf("direct write with the key: %+v, %v; want version 1", res, err)
	}
}

// TestApproveAndReject: an approval writes the next version with the
// proposer as agent and an approve row naming the reviewer; approving twice
// is a conflict naming the version; a rejection keeps the proposal with its
// reason and writes no version.
func TestApproveAndReject(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	put(t, s, ref, "a", "first")
	p := propose(t, s, ref, "pia", "a", "second")
	res, err := s.Approve(pctx, ref, p.Proposal, "rita", memory.Write{})
	if err != nil || res.Version != 2 {
		t.Fatalf("approve: %+v, %v; want version 2", res, err)
	}
	v, _, err := s.Get(pctx, ref, "a", 2)
	if err != nil || v.Agent != "pia" || v.Content != "second" {
		t.Errorf("approved version %+v, %v; want pia's content", v, err)
	}
	rows, _ := s.AuditRows(pctx, ref, memory.LogFilter{Limit: 10})
	if len(rows) == 0 || rows[0].Action != actionApprove || rows[0].Agent != "rita" || rows[0].Version != 2 {
		t.Errorf("audit rows %+v; want approve by rita at version 2 first", rows)
	}
	_, err = s.Approve(pctx, ref, p.Proposal, "rita", memory.Write{})
	if memory.ErrorCode(err) != memory.CodeConflict || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("approve twice: %v, want conflict naming version 2", err)
	}
	if _, latest, _ := s.Get(pctx, ref, "a", 0); latest != 2 {
		t.Errorf("latest %d after approving twice, want 2", latest)
	}
	got, _, err := s.Proposal(pctx, ref, p.Proposal)
	if err != nil || got.State != memory.ProposalApproved || got.DecidedBy != "rita" || got.Version != 2 || got.DecidedAt == nil {
		t.Errorf("approved proposal %+v, %v", got, err)
	}

	q := propose(t, s, ref, "pia", "a", "third")
	rej, err := s.Reject(pctx, ref, q.Proposal, "rita", "", "says the opposite of decision 4")
	if err != nil || rej.State != memory.ProposalRejected || rej.Reason != "says the opposite of decision 4" {
		t.Errorf("reject: %+v, %v", rej, err)
	}
	if got, _, _ := s.Proposal(pctx, ref, q.Proposal); got.Reason != rej.Reason || got.State != memory.ProposalRejected {
		t.Errorf("rejected proposal read back %+v", got)
	}
	if _, err := s.Approve(pctx, ref, q.Proposal, "rita", memory.Write{}); memory.ErrorCode(err) != memory.CodeConflict {
		t.Errorf("approve a rejected proposal: %v, want conflict", err)
	}
	if _, latest, _ := s.Get(pctx, ref, "a", 0); latest != 2 {
		t.Errorf("latest %d after a rejection, want 2", latest)
	}
}

// TestApproveStaleBase: once the entry moved past the proposal's base, an
// approval needs expected_version equal to the latest version.
func TestApproveStaleBase(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	put(t, s, ref, "a", "first")
	p := propose(t, s, ref, "pia", "a", "proposed on 1")
	put(t, s, ref, "a", "second, direct")
	_, err := s.Approve(pctx, ref, p.Proposal, "rita", memory.Write{})
	if memory.ErrorCode(err) != memory.CodeConflict || !strings.Contains(err.Error(), "base 1, now 2") ||
		!strings.Contains(err.Error(), "expected_version 2") {
		t.Fatalf("blind approval of a stale base: %v, want conflict naming base, now and expected_version", err)
	}
	one := 1
	if _, err := s.Approve(pctx, ref, p.Proposal, "rita", memory.Write{ExpectedVersion: &one}); memory.ErrorCode(err) != memory.CodeConflict {
		t.Errorf("approval with expected_version 1 (the base): %v, want conflict", err)
	}
	two := 2
	res, err := s.Approve(pctx, ref, p.Proposal, "rita", memory.Write{ExpectedVersion: &two, Content: "merged by rita", Tags: []string{"m"}})
	if err != nil || res.Version != 3 {
		t.Fatalf("approval with expected_version 2: %+v, %v", res, err)
	}
	if v, _, _ := s.Get(pctx, ref, "a", 3); v.Content != "merged by rita" || v.Agent != "pia" || len(v.Tags) != 1 {
		t.Errorf("edited approval wrote %+v", v)
	}
}

// TestProposalOfAnotherProject: an id is read and decided only in its own
// project; elsewhere it is not_found, as a missing one.
func TestProposalOfAnotherProject(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	other := ensure(t, s, "ws", "q")
	p := propose(t, s, ref, "pia", "a", "x")
	_, _, errOther := s.Proposal(pctx, other, p.Proposal)
	_, _, errMissing := s.Proposal(pctx, other, p.Proposal+1000)
	if memory.ErrorCode(errOther) != memory.CodeNotFound || errOther.Error() != strings.Replace(errMissing.Error(), fmt.Sprint(p.Proposal+1000), fmt.Sprint(p.Proposal), 1) {
		t.Errorf("another project's proposal: %v; a missing one: %v", errOther, errMissing)
	}
	if _, err := s.Approve(pctx, other, p.Proposal, "rita", memory.Write{}); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("approve in another project: %v, want not_found", err)
	}
	if _, err := s.Reject(pctx, other, p.Proposal, "rita", "", "no"); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("reject in another project: %v, want not_found", err)
	}
}

// TestPendingBound: a project holds at most memory.MaxPendingProposals
// pending proposals; beyond it a proposal is budget_exhausted, and deciding
// one makes room again.
func TestPendingBound(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	var first int64
	for i := range memory.MaxPendingProposals {
		res := propose(t, s, ref, "pia", fmt.Sprintf("s/%d", i), "x")
		if i == 0 {
			first = res.Proposal
		}
	}
	_, err := s.Append(pctx, ref, memory.Write{Slug: "one-more", Title: "t", Content: "x", Agent: "pia", Review: memory.ProposeAlways})
	if memory.ErrorCode(err) != memory.CodeBudgetExhausted || !strings.Contains(err.Error(), "approve or reject") {
		t.Fatalf("proposal %d: %v, want budget_exhausted saying what to do", memory.MaxPendingProposals+1, err)
	}
	if _, err := s.Reject(pctx, ref, first, "rita", "", "room"); err != nil {
		t.Fatal(err)
	}
	propose(t, s, ref, "pia", "one-more", "x")
}

// TestProposalsListing: pages by id, filtered by state and agent.
func TestProposalsListing(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	for i := range 5 {
		propose(t, s, ref, []string{"pia", "pete"}[i%2], fmt.Sprintf("s/%d", i), "x")
	}
	all, cur, err := s.Proposals(pctx, ref, memory.ProposalPending, "", 0, 3)
	if err != nil || len(all) != 3 || len(cur) != 3 {
		t.Fatalf("first page: %d, %v", len(all), err)
	}
	rest, _, _ := s.Proposals(pctx, ref, memory.ProposalPending, "", all[2].ID, 3)
	if len(rest) != 2 || rest[0].ID <= all[2].ID {
		t.Errorf("second page %+v", rest)
	}
	pias, _, _ := s.Proposals(pctx, ref, "", "pia", 0, 10)
	if len(pias) != 3 {
		t.Errorf("pia's proposals: %d, want 3", len(pias))
	}
	if rejected, _, _ := s.Proposals(pctx, ref, memory.ProposalRejected, "", 0, 10); len(rejected) != 0 {
		t.Errorf("rejected: %d, want 0", len(rejected))
	}
}

// TestProposalsSurviveReopen: proposals and decisions are in the file.
func TestProposalsSurviveReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref := ensure(t, s, "ws", "p")
	p := propose(t, s, ref, "pia", "a", "kept")
	q := propose(t, s, ref, "pia", "b", "approved")
	if _, err := s.Approve(pctx, ref, q.Proposal, "rita", memory.Write{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, dir)
	got, _, err := s.Proposal(pctx, ref, p.Proposal)
	if err != nil || got.Content != "kept" || got.State != memory.ProposalPending {
		t.Errorf("pending proposal after reopen: %+v, %v", got, err)
	}
	if got, _, _ := s.Proposal(pctx, ref, q.Proposal); got.State != memory.ProposalApproved || got.Version != 1 {
		t.Errorf("approved proposal after reopen: %+v", got)
	}
}

// TestBudgetCountsProposals: a proposal counts as a write with its content
// bytes; its approval does not count again.
func TestBudgetCountsProposals(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	since := time.Now().Add(-time.Minute)
	p := propose(t, s, ref, "pia", "a", "12345")
	if n, b, err := s.WrittenSince(pctx, ref, since); err != nil || n != 1 || b != 5 {
		t.Errorf("after a proposal: %d writes, %d bytes, %v; want 1 and 5", n, b, err)
	}
	if _, err := s.Approve(pctx, ref, p.Proposal, "rita", memory.Write{}); err != nil {
		t.Fatal(err)
	}
	if n, b, err := s.WrittenSince(pctx, ref, since); err != nil || n != 1 || b != 5 {
		t.Errorf("after its approval: %d writes, %d bytes, %v; want still 1 and 5", n, b, err)
	}
	q := propose(t, s, ref, "pia", "b", "xy")
	if _, err := s.Reject(pctx, ref, q.Proposal, "rita", "", "no"); err != nil {
		t.Fatal(err)
	}
	put(t, s, ref, "c", "abc")
	if n, err := s.CountWritesSince(pctx, ref, since); err != nil || n != 3 {
		t.Errorf("count: %d, %v; want 3 (two proposals and a write)", n, err)
	}
	if n, b, _ := s.WrittenSince(pctx, ref, since); n != 3 || b != 10 {
		t.Errorf("written: %d writes, %d bytes; want 3 and 10", n, b)
	}
}

// TestConcurrentProposeAndApprove: many goroutines propose and approve the
// same slugs at once; every approved proposal is exactly one version, and
// versions have no gaps
// (docs/architecture.md#invariant-2-one-version-per-remember-no-gaps).
func TestConcurrentProposeAndApprove(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	const workers, each = 8, 12
	var wg sync.WaitGroup
	var mu sync.Mutex
	approved := map[int64]int{}
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				slug := fmt.Sprintf("s/%d", i%3)
				res, err := s.Append(pctx, ref, memory.Write{Slug: slug, Title: "t", Content: fmt.Sprint(g, i), Agent: "pia", Review: memory.ProposeAlways})
				if err != nil {
					t.Error(err)
					return
				}
				// Approve with the latest version, as a reviewer who looked.
				for try := 0; try < 20; try++ {
					_, latest, _ := s.Get(pctx, ref, slug, 0)
					out, err := s.Approve(pctx, ref, res.Proposal, "rita", memory.Write{ExpectedVersion: &latest})
					if err == nil {
						mu.Lock()
						approved[res.Proposal] = out.Version
						mu.Unlock()
						break
					}
					if memory.ErrorCode(err) != memory.CodeConflict {
						t.Error(err)
						return
					}
				}
				// Approving again never applies it twice.
				if _, err := s.Approve(pctx, ref, res.Proposal, "rita", memory.Write{}); memory.ErrorCode(err) != memory.CodeConflict {
					t.Errorf("second approval: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	total := 0
	for i := range 3 {
		hist, err := s.History(pctx, ref, fmt.Sprintf("s/%d", i), 1000)
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range hist {
			if v.Version != len(hist)-j {
				t.Fatalf("s/%d: versions %v have a gap", i, hist)
			}
		}
		total += len(hist)
	}
	if total != len(approved) {
		t.Errorf("%d versions for %d approved proposals", total, len(approved))
	}
	ps, _, _ := s.Proposals(pctx, ref, memory.ProposalApproved, "", 0, 500)
	for _, p := range ps {
		if approved[p.ID] != p.Version {
			t.Errorf("proposal %d records version %d, its approval answered %d", p.ID, p.Version, approved[p.ID])
		}
	}
}
