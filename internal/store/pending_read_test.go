package store

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
)

// TestPendingOf: PendingOf answers exactly the agent's pending proposals in
// the project, newest first, with what a recall shows (a proposed forget
// marked Deleted, tags, valid_until); not another agent's, not a decided
// one, not one in another project; nothing for an agent with none; a
// missing project is not_found.
func TestPendingOf(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	other := ensure(t, s, "ws", "q")
	put(t, s, ref, "gone", "to be forgotten")
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	first, err := s.Append(pctx, ref, memory.Write{Slug: "a", Title: "t a", Content: "alpha", Tags: []string{"x", "y"},
		ValidUntil: &until, Agent: "pia", Review: memory.ProposeAlways})
	if err != nil {
		t.Fatal(err)
	}
	approved := propose(t, s, ref, "pia", "b", "approved later")
	rejected := propose(t, s, ref, "pia", "c", "rejected later")
	propose(t, s, ref, "otto", "d", "another agent's")
	propose(t, s, other, "pia", "e", "another project's")
	forget, err := s.Append(pctx, ref, memory.Write{Slug: "gone", Deleted: true, Agent: "pia", Review: memory.ProposeAlways})
	if err != nil {
		t.Fatal(err)
	}
	last := propose(t, s, ref, "pia", "f", "the newest")
	if _, err := s.Approve(pctx, ref, approved.Proposal, "rita", memory.Write{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reject(pctx, ref, rejected.Proposal, "rita", "", "no"); err != nil {
		t.Fatal(err)
	}

	got, err := s.PendingOf(pctx, ref, "pia")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, p := range got {
		ids = append(ids, p.ID)
		if p.Project != ref || p.Agent != "pia" || p.State != memory.ProposalPending || p.CreatedAt.IsZero() {
			t.Errorf("proposal %d: %+v; want project %s, agent pia, pending, a time", p.ID, p, ref)
		}
	}
	if want := []int64{last.Proposal, forget.Proposal, first.Proposal}; fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Fatalf("pia's pending proposals %v, want %v (newest first, only pending, only this project)", ids, want)
	}
	if p := got[2]; p.Slug != "a" || p.Title != "t a" || p.Content != "alpha" || fmt.Sprint(p.Tags) != "[x y]" ||
		p.BaseVersion != 0 || p.Deleted || p.ValidUntil == nil || !p.ValidUntil.Equal(until) {
		t.Errorf("first proposal read as %+v", p)
	}
	if p := got[1]; p.Slug != "gone" || !p.Deleted || p.BaseVersion != 1 {
		t.Errorf("proposed forget read as %+v; want Deleted, based on 1", p)
	}
	if got, err := s.PendingOf(pctx, ref, "nobody"); err != nil || len(got) != 0 {
		t.Errorf("an agent without proposals: %+v, %v; want none", got, err)
	}
	if _, err := s.PendingOf(pctx, memory.ProjectRef{Workspace: "ws", Project: "missing"}, "pia"); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("missing project: %v, want not_found", err)
	}
}

// TestPendingOfIsPreparedOnce: PendingOf's statement is compiled once per
// connection, whatever the agent and whether it finds rows; a re-plan per
// run would cost more than the read (see stmtCacheSize).
func TestPendingOfIsPreparedOnce(t *testing.T) {
	s, ref, ws := openWorkspace(t)
	var compiled atomic.Int64
	countCompiles(t, ws.pool.reader, &compiled)
	for i := range 4 {
		propose(t, s, ref, fmt.Sprintf("agent-%d", i), fmt.Sprintf("s/%d", i), "text")
	}
	run := func(i int) {
		t.Helper()
		// Even runs find a proposal, odd ones none.
		agent := fmt.Sprintf("agent-%d", i%4)
		if i%2 == 1 {
			agent = fmt.Sprintf("nobody-%d", i)
		}
		if _, err := s.PendingOf(pctx, ref, agent); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		run(i)
	}
	before := compiled.Load()
	for i := 2; i < 12; i++ {
		run(i)
	}
	if n := compiled.Load() - before; n != 0 {
		t.Errorf("PendingOf: SQLite compiled again in 10 more runs (%d authorizer calls)", n)
	}
}

// BenchmarkPendingOf measures PendingOf, the read a recall of a propose or
// write key adds: in a project without proposals (review off, the common
// case); for an agent with none among 400 pending of 20 others; and for one
// with 5 of its own among those 400. BenchmarkPendingOfAgent is the read
// recall made before, through Proposals (all columns, the join).
func BenchmarkPendingOf(b *testing.B) {
	for _, c := range []struct {
		name        string
		others, own int
	}{{"none", 0, 0}, {"others400", 400, 0}, {"own5", 400, 5}} {
		b.Run(c.name, func(b *testing.B) {
			s := openTest(b)
			ref := ensure(b, s, "ws", "p")
			for i := range c.others {
				propose(b, s, ref, fmt.Sprintf("agent-%d", i%20), fmt.Sprintf("o/%d", i), "some proposed text")
			}
			for i := range c.own {
				propose(b, s, ref, "walt", fmt.Sprintf("own/%d", i), "the zeppelin hangar needs a new roof")
			}
			b.ReportAllocs()
			for b.Loop() {
				ps, err := s.PendingOf(pctx, ref, "walt")
				if err != nil || len(ps) != c.own {
					b.Fatalf("PendingOf: %d, %v; want %d", len(ps), err, c.own)
				}
			}
		})
	}
}
