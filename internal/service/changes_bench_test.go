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
// check, two reads, merge, next cursor).
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
	for b.Loop() {
		res, err := env.Svc.Changes(ctx, c, service.ChangesRequest{Since: mid.NextCursor, Limit: 100})
		if err != nil || len(res.Changes) != 100 {
			b.Fatalf("%d changes, %v", len(res.Changes), err)
		}
	}
}
