package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"munin/internal/memory"
)

// pendingIDs is agent's pending proposal ids in ref, as PendingOf answers.
func pendingIDs(s *Store, ref memory.ProjectRef, agent string) ([]int64, error) {
	ps, err := s.PendingOf(pctx, ref, agent)
	var ids []int64
	for _, p := range ps {
		ids = append(ids, p.ID)
	}
	return ids, err
}

// TestPendingOfNoneFromTheCache: a second "none" for an agent comes from the
// latest-version cache; a proposal of that agent (and its approval or
// rejection) is seen by the next PendingOf; another agent's proposal or a
// direct write leaves the agent's "none" cached.
func TestPendingOfNoneFromTheCache(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "ws", "p")
	none := func(agent string, cached bool) {
		t.Helper()
		hits := s.latest.hits.Load()
		ids, err := pendingIDs(s, ref, agent)
		if err != nil || len(ids) != 0 {
			t.Fatalf("pending of %s: %v, %v; want none", agent, ids, err)
		}
		if got := s.latest.hits.Load() > hits; got != cached {
			t.Fatalf("pending of %s answered from the cache: %v, want %v", agent, got, cached)
		}
	}
	none("pia", false)
	none("pia", true)
	none("otto", false)

	put(t, s, ref, "a", "a direct write")
	propose(t, s, ref, "otto", "b", "otto's")
	none("pia", true) // neither changed pia's proposals

	p := propose(t, s, ref, "pia", "a", "pia's")
	if ids, err := pendingIDs(s, ref, "pia"); err != nil || !slices.Equal(ids, []int64{p.Proposal}) {
		t.Fatalf("pending of pia after her proposal: %v, %v; want [%d]", ids, err, p.Proposal)
	}
	if _, err := s.Reject(pctx, ref, p.Proposal, "rita", "", "no"); err != nil {
		t.Fatal(err)
	}
	none("pia", false)
	none("pia", true)
	q := propose(t, s, ref, "pia", "a", "again")
	if _, err := s.Approve(pctx, ref, q.Proposal, "rita", memory.Write{}); err != nil {
		t.Fatal(err)
	}
	none("pia", false)
}

// TestPendingOfNeverCachesNoneOverAProposal is invariant 3
// (docs/architecture.md#invariant-3-read-your-writes) for proposals with the
// cache's "none" under contention: each agent proposes and has its
// proposals approved or rejected while readers ask for every agent's
// pending proposals all the time (racing "none" fills against the
// writes). After each acknowledged step the agent reads exactly the
// proposals it has pending. A tiny cache evicts fences all the time.
func TestPendingOfNeverCachesNoneOverAProposal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bytes int64
	}{{"large cache", 4 << 20}, {"tiny cache", 3 << 10}} {
		t.Run(tc.name, func(t *testing.T) {
			s := openAtWith(t, t.TempDir(), Options{LatestCacheBytes: tc.bytes})
			ref := ensure(t, s, "ws", "p")
			const agents, readers, steps = 6, 6, 40
			errs := whileWriting(agents, readers, func(a int) error {
				return proposeAndDecide(s, ref, fmt.Sprintf("agent%d", a), steps, uint64(a))
			}, func(r int) error {
				_, err := pendingIDs(s, ref, fmt.Sprintf("agent%d", rand.IntN(agents)))
				return err
			})
			for _, err := range errs {
				t.Fatal(err)
			}
			if s.latest.hits.Load() == 0 {
				t.Error("no PendingOf was answered from the cache: the test raced nothing")
			}
		})
	}
}

// proposeAndDecide is one agent of TestPendingOfNeverCachesNoneOverAProposal:
// it alone proposes (a new slug each time) and decides its proposals, so what it has
// pending is known, and it checks PendingOf after every step.
func proposeAndDecide(s *Store, ref memory.ProjectRef, agent string, steps int, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 1))
	var pending []int64 // newest first, as PendingOf answers
	for n := range steps {
		if len(pending) == 0 || rng.IntN(2) == 0 {
			res, err := s.Append(pctx, ref, memory.Write{Slug: fmt.Sprintf("s/%s-%d", agent, n), Title: "t", Content: fmt.Sprintf("%s-%d", agent, n),
				Agent: agent, Review: memory.ProposeAlways})
			if err != nil {
				return fmt.Errorf("%s proposes: %w", agent, err)
			}
			pending = append([]int64{res.Proposal}, pending...)
		} else {
			i := rng.IntN(len(pending))
			var err error
			if rng.IntN(2) == 0 {
				_, err = s.Reject(pctx, ref, pending[i], "rita", "", "no")
			} else {
				_, err = s.Approve(pctx, ref, pending[i], "rita", memory.Write{})
			}
			if err != nil {
				return fmt.Errorf("%s's proposal %d decided: %w", agent, pending[i], err)
			}
			pending = slices.Delete(pending, i, i+1)
		}
		got, err := pendingIDs(s, ref, agent)
		if err != nil {
			return err
		}
		if !slices.Equal(got, pending) {
			return fmt.Errorf("%s after step %d reads pending %v, has %v", agent, n, got, pending)
		}
	}
	return nil
}
