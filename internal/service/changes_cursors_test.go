package service_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// TestChangesCursorAfterEachChange is the property of PerChange: while
// writers write to four projects in three workspaces, a reader pages the
// feed with the cursor after each change; afterwards, for every change i
// it read, the feed read from the cursor after i holds exactly the changes
// not read up to i — none of them again, none missing — each project in
// commit order (run with -race).
func TestChangesCursorAfterEachChange(t *testing.T) {
	const writers, perWriter = 6, 30
	env := servicetest.New(t, service.Options{BudgetOff: true, RecallRate: -1})
	type target struct {
		project string
		c       memory.Caller
	}
	var targets []target
	var tokens []string
	for _, wp := range [][2]string{{"acme", "one"}, {"acme", "two"}, {"beta", "one"}, {"gamma", "one"}} {
		tok, c := env.Key(t, wp[0], wp[1], "w-"+wp[0]+"-"+wp[1], memory.RoleWrite)
		targets = append(targets, target{wp[0] + "/" + wp[1], c})
		tokens = append(tokens, tok)
	}
	reader := env.Caller(t, tokens...)

	var wg sync.WaitGroup
	done := make(chan struct{})
	for g := range writers {
		wg.Go(func() {
			for i := range perWriter {
				tg := targets[(g*7+i*3)%len(targets)]
				if _, err := env.Svc.Remember(ctx, tg.c, service.RememberRequest{Project: tg.project,
					Slug: fmt.Sprintf("g%d/s%d", g, i%4), Content: "x"}); err != nil {
					t.Errorf("writer %d: %v", g, err)
					return
				}
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	// A failure below ends the test only after the writers (whose store
	// it closes).
	defer wg.Wait()

	// Page from the beginning with limits 1..7 while the writes go on.
	var read []service.Change
	var after []string // after[k]: the cursor after read[k]
	since, finished := "", false
	for page := 0; ; page++ {
		if page == 100*maxPages {
			t.Fatal("the feed never ran dry")
		}
		res, err := env.Svc.Changes(ctx, reader, service.ChangesRequest{Since: since, Limit: 1 + page%7, PerChange: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Cursors) != len(res.Changes) {
			t.Fatalf("%d cursors for %d changes", len(res.Cursors), len(res.Changes))
		}
		if n := len(res.Cursors); n > 0 && res.Cursors[n-1] != res.NextCursor {
			t.Fatalf("the cursor after the last change is not next_cursor")
		}
		read, after = append(read, res.Changes...), append(after, res.Cursors...)
		since = res.NextCursor
		if len(res.Changes) > 0 {
			continue
		}
		if finished {
			break
		}
		select {
		case <-done:
			finished = true
		case <-time.After(time.Millisecond):
		}
	}
	if len(read) != writers*perWriter {
		t.Fatalf("read %d changes, want %d", len(read), writers*perWriter)
	}
	all, _ := pageAll(t, env.Svc, reader, "", memory.MaxChangesLimit)
	order := map[string]int{} // line → its place in its project's commit order
	perProject := map[string]int{}
	for _, l := range lines(all) {
		p := strings.Fields(l)[0]
		order[l] = perProject[p]
		perProject[p]++
	}
	readLines := lines(read)
	for k := range read {
		rest, _ := pageAll(t, env.Svc, reader, after[k], 1+k%50)
		got := lines(rest)
		want := slices.Clone(readLines[k+1:])
		if !sameSet(got, want) {
			t.Fatalf("from the cursor after change %d (%s): %d changes %v, want the %d not read yet %v",
				k, readLines[k], len(got), got, len(want), want)
		}
		last := map[string]int{}
		for _, l := range got {
			p := strings.Fields(l)[0]
			if n, ok := last[p]; ok && order[l] != n+1 {
				t.Fatalf("from the cursor after change %d: %s out of its project's order", k, l)
			}
			last[p] = order[l]
		}
	}
}

// sameSet reports whether a and b hold the same lines, each once.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, l := range a {
		if seen[l] {
			return false
		}
		seen[l] = true
	}
	for _, l := range b {
		if !seen[l] {
			return false
		}
	}
	return true
}
