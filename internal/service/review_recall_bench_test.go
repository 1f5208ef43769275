package service

import (
	"context"
	"fmt"
	"testing"

	"munin/internal/memory"
	"munin/internal/search"
	"munin/internal/store"
)

// benchKey creates project ref if new and a key of agent with role in svc,
// and returns the caller authentication yields for it.
func benchKey(b *testing.B, svc *Service, ref memory.ProjectRef, agent string, role memory.Role) memory.Caller {
	b.Helper()
	token, _, err := svc.CreateKey(context.Background(), ref, agent, role)
	if err != nil {
		b.Fatal(err)
	}
	c, err := svc.Authenticate(context.Background(), token)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkWithPending measures what the caller's pending proposals add to
// a recall of a write key (withPending alone, without the index search):
// none in a project without proposals (review off, the common case); none
// of its own among 400 pending of 20 other agents; and 5 of its own that
// match the query, among those 400.
func BenchmarkWithPending(b *testing.B) {
	for _, c := range []struct {
		name        string
		others, own int
		wantFound   int
	}{{"none", 0, 0, 0}, {"others400", 400, 0, 0}, {"own5", 400, 5, 5}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			st, err := store.Open(b.TempDir(), store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			reg := search.NewRegistry(st, search.Options{})
			svc := New(st, reg, Options{RecallRate: -1})
			b.Cleanup(func() { svc.Close(); reg.Close(); st.Close() })
			ref := memory.ProjectRef{Workspace: "ws", Project: "p"}
			walt := benchKey(b, svc, ref, "walt", memory.RoleWrite)
			for i := 0; i < c.others; i += 20 {
				other := benchKey(b, svc, ref, fmt.Sprintf("agent-%d", i/20), memory.RolePropose)
				for j := range 20 {
					if _, err := svc.Remember(ctx, other, RememberRequest{Slug: fmt.Sprintf("o/%d", i+j), Content: "a zeppelin proposed by another agent"}); err != nil {
						b.Fatal(err)
					}
				}
			}
			if c.own > 0 {
				if err := svc.SetReview(ctx, benchKey(b, svc, ref, "rita", memory.RoleAdmin), ref, memory.ReviewAgents); err != nil {
					b.Fatal(err)
				}
			}
			for i := range c.own {
				res, err := svc.Remember(ctx, walt, RememberRequest{Slug: fmt.Sprintf("own/%d", i), Content: "the zeppelin hangar needs a new roof, says walt"})
				if err != nil || res.State != memory.ProposalPending {
					b.Fatalf("walt proposes: %+v, %v", res, err)
				}
			}
			q := memory.SearchQuery{Text: "zeppelin hangar", Limit: memory.DefaultRecallLimit}
			b.ReportAllocs()
			for b.Loop() {
				hits, err := svc.withPending(ctx, walt.Keys(), q, nil)
				if err != nil || len(hits) != c.wantFound {
					b.Fatalf("withPending: %d hits, %v; want %d", len(hits), err, c.wantFound)
				}
			}
		})
	}
}
