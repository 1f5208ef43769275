package service_test

import (
	"fmt"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// BenchmarkChanges reads a page of 100 changes across two workspaces of
// 1,000 writes each, from a cursor in the middle: the whole call (cursor
// check, two reads, merge, next cursor). per-change asks for the cursor
// after each change as well (what a live stream reads); pages-of-one reads
// the same 100 changes one call each, which is what a stream did to learn
// those cursors before PerChange.
func BenchmarkChanges(b *testing.B) {
	env := servicetest.New(b, service.Options{BudgetOff: true})
	tokA, a := env.Key(b, "acme", "one", "ann", memory.RoleWrite)
	tokB, _ := env.Key(b, "beta", "two", "bob", memory.RoleRead)
	_, bw := env.Key(b, "beta", "two", "bill", memory.RoleWrite)
	for i := range 1000 {
		feedWrite(b, env.Svc, a, "acme/one", fmt.Sprintf("s/%d", i%50))
		feedWrite(b, env.Svc, bw, "beta/two", fmt.Sprintf("s/%d", i%50))
	}
	c := env.Caller(b, tokA, tokB)
	mid, err := env.Svc.Changes(ctx, c, service.ChangesRequest{Limit: 1000})
	if err != nil {
		b.Fatal(err)
	}
	for _, perChange := range []bool{false, true} {
		name := "page"
		if perChange {
			name = "per-change"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				res, err := env.Svc.Changes(ctx, c, service.ChangesRequest{Since: mid.NextCursor, Limit: 100, PerChange: perChange})
				if err != nil || len(res.Changes) != 100 || perChange && len(res.Cursors) != 100 {
					b.Fatalf("%d changes, %d cursors, %v", len(res.Changes), len(res.Cursors), err)
				}
			}
		})
	}
	b.Run("pages-of-one", func(b *testing.B) {
		for b.Loop() {
			since := mid.NextCursor
			for range 100 {
				res, err := env.Svc.Changes(ctx, c, service.ChangesRequest{Since: since, Limit: 1})
				if err != nil || len(res.Changes) != 1 {
					b.Fatalf("%d changes, %v", len(res.Changes), err)
				}
				since = res.NextCursor
			}
		}
	})
}
