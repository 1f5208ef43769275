package store

import (
	"fmt"
	"testing"

	"munin/internal/memory"
)

// BenchmarkAppendReview measures what the review check costs a write key's
// write while review is off (the setting read in the writer's transaction):
// direct is an admin's write, ifReviewed a write key's.
func BenchmarkAppendReview(b *testing.B) {
	for _, c := range []struct {
		name   string
		review memory.Review
	}{{"direct", memory.WriteDirect}, {"ifReviewed", memory.ProposeIfReviewed}} {
		b.Run(c.name, func(b *testing.B) {
			s := openTest(b)
			ref := ensure(b, s, "ws", "p")
			for i := 0; b.Loop(); i++ {
				if _, err := s.Append(pctx, ref, memory.Write{Slug: fmt.Sprintf("s/%d", i%100), Title: "t", Content: "x",
					Agent: "a", Review: c.review}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPendingOfAgent measures the review queue's read of one agent's
// pending proposals (Proposals, full rows) in a project where other agents
// have 400 pending; a recall reads with PendingOf instead (BenchmarkPendingOf).
func BenchmarkPendingOfAgent(b *testing.B) {
	s := openTest(b)
	ref := ensure(b, s, "ws", "p")
	for i := range 400 {
		propose(b, s, ref, fmt.Sprintf("agent-%d", i%20), fmt.Sprintf("s/%d", i), "some proposed text")
	}
	for b.Loop() {
		if _, _, err := s.Proposals(pctx, ref, memory.ProposalPending, "nobody", 0, memory.MaxPendingProposals); err != nil {
			b.Fatal(err)
		}
	}
}
