package service_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// TestSearchLogRetention: after a prune, a project keeps its newest rows up
// to the row cap and none older than the age; a project under the cap keeps
// all its recent rows; the most-missed queries of the last 7 days still
// count what is kept.
func TestSearchLogRetention(t *testing.T) {
	var mu sync.Mutex
	now := time.Now().UTC()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	setClock := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	env := servicetest.New(t, service.Options{Now: clock, RecallRate: -1, SearchLogDays: 30, SearchLogRows: 5})
	_, a := env.Key(t, "w", "a", "alice", memory.RoleRead)
	_, b := env.Key(t, "w", "b", "bob", memory.RoleRead)
	_, c := env.Key(t, "x", "c", "carol", memory.RoleRead)
	recall := func(key memory.Caller, query string) {
		t.Helper()
		if _, err := env.Svc.Recall(ctx, key, service.RecallRequest{Query: query}); err != nil {
			t.Fatal(err)
		}
	}
	today := now
	setClock(today.Add(-40 * 24 * time.Hour))
	for _, key := range []memory.Caller{a, b, c} {
		recall(key, "ancient")
	}
	setClock(today.Add(-10 * 24 * time.Hour))
	recall(a, "tenday")
	for i := range 8 {
		setClock(today.Add(time.Duration(i-8) * time.Minute))
		recall(a, fmt.Sprintf("recent%d", i))
	}
	setClock(today)
	recall(a, "recent7") // asked twice: first among the missed
	for i := range 4 {
		recall(b, fmt.Sprintf("brecent%d", i))
	}
	env.Svc.PruneSearchLog()

	queries := func(key memory.Caller) []string {
		t.Helper()
		rows, err := env.Svc.SearchLog(ctx, key, key.First().Project, memory.LogFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range rows {
			out = append(out, r.Query)
		}
		return out
	}
	if got, want := queries(a), []string{"recent7", "recent7", "recent6", "recent5", "recent4"}; !slices.Equal(got, want) {
		t.Errorf("%s keeps %v, want the 5 newest %v", a.First().Project, got, want)
	}
	if got, want := queries(b), []string{"brecent3", "brecent2", "brecent1", "brecent0"}; !slices.Equal(got, want) {
		t.Errorf("%s keeps %v, want its 4 recent rows %v", b.First().Project, got, want)
	}
	if got := queries(c); len(got) != 0 {
		t.Errorf("%s keeps %v, want its 40-day-old row gone", c.First().Project, got)
	}
	missed, err := env.Svc.MissedQueries(ctx, a, a.First().Project, today.Add(-7*24*time.Hour), 20)
	if err != nil {
		t.Fatal(err)
	}
	if len(missed) != 4 || missed[0].Query != "recent7" || missed[0].Count != 2 {
		t.Errorf("missed queries of the last 7 days: %+v, want recent7 (2) first among 4", missed)
	}
}
