package service_test

import (
	"context"
	"errors"
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

// gatedIndex holds every search of one project until the gate opens.
type gatedIndex struct {
	service.Index
	project memory.ProjectRef
	entered chan struct{}
	gate    chan struct{}
}

func (g *gatedIndex) SearchProjects(ctx context.Context, refs []memory.ProjectRef, q memory.SearchQuery) ([]memory.Hit, error) {
	if slices.Contains(refs, g.project) {
		g.entered <- struct{}{}
		<-g.gate
	}
	return g.Index.SearchProjects(ctx, refs, q)
}

// TestRecallConcurrencyCapRefusesAtOnce: while a key has 4 recalls running,
// its further recalls come back at once with budget_exhausted and a
// Retry-After, and another key's recall runs meanwhile.
func TestRecallConcurrencyCapRefusesAtOnce(t *testing.T) {
	opts := service.Options{RecallRate: -1, ProjectRecallConcurrency: -1}
	env := servicetest.New(t, opts)
	_, a := env.Key(t, "w", "a", "alice", memory.RoleRead)
	_, b := env.Key(t, "w", "b", "bob", memory.RoleRead)
	idx := &gatedIndex{Index: env.Index, project: a.First().Project, entered: make(chan struct{}, 100), gate: make(chan struct{})}
	svc := service.New(env.Store, idx, opts)
	var open sync.Once
	openGate := func() { open.Do(func() { close(idx.gate) }) }
	t.Cleanup(func() { openGate(); svc.Close() })

	const callers = 20
	errs := make(chan error, callers)
	for range callers {
		go func() {
			_, err := svc.Recall(ctx, a, service.RecallRequest{Query: "anything"})
			errs <- err
		}()
	}
	for range service.DefaultRecallConcurrency {
		<-idx.entered
	}
	// The other 16 do not wait for the gate: they are refused at once.
	for i := range callers - service.DefaultRecallConcurrency {
		select {
		case err := <-errs:
			var me *memory.Error
			if memory.ErrorCode(err) != memory.CodeBudgetExhausted || !errors.As(err, &me) || me.RetryAfter != time.Second ||
				!strings.Contains(err.Error(), "may run 4 recalls at once") {
				t.Fatalf("refusal %d: %v, want budget_exhausted naming the cap, retry after 1 s", i, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("only %d of %d recalls over the cap came back while 4 were held", i, callers-service.DefaultRecallConcurrency)
		}
	}
	if _, err := svc.Recall(ctx, b, service.RecallRequest{Query: "anything"}); err != nil {
		t.Fatalf("another key while a is at its cap: %v", err)
	}
	openGate()
	for range service.DefaultRecallConcurrency {
		if err := <-errs; err != nil {
			t.Fatalf("held recall: %v", err)
		}
	}
	if _, err := svc.Recall(ctx, a, service.RecallRequest{Query: "anything"}); err != nil {
		t.Fatalf("after the held recalls finished: %v", err)
	}
}

// TestRecallRateLimitOfService: the service admits a key's burst and then
// refuses with the rate; recalls refused for bad input cost no token.
func TestRecallRateLimitOfService(t *testing.T) {
	now := time.Now()
	env := servicetest.New(t, service.Options{RecallRate: 2, RecallBurst: 3, Now: func() time.Time { return now }})
	_, a := env.Key(t, "w", "a", "alice", memory.RoleRead)
	_, b := env.Key(t, "w", "a", "bob", memory.RoleRead)
	if _, err := env.Svc.Recall(ctx, a, service.RecallRequest{Query: "x", Limit: 1000}); memory.ErrorCode(err) != memory.CodeInvalid {
		t.Fatalf("bad limit: %v", err)
	}
	for i := range 3 {
		if _, err := env.Svc.Recall(ctx, a, service.RecallRequest{Query: "x"}); err != nil {
			t.Fatalf("recall %d of the burst: %v", i+1, err)
		}
	}
	_, err := env.Svc.Recall(ctx, a, service.RecallRequest{Query: "x"})
	if err == nil || err.Error() != fmt.Sprintf("budget_exhausted: key %d (alice) may recall 2 times per second; retry in 1 s", a.First().ID) {
		t.Fatalf("4th recall: %v", err)
	}
	if _, err := env.Svc.Recall(ctx, b, service.RecallRequest{Query: "x"}); err != nil {
		t.Fatalf("another key of the project: %v", err)
	}
}

// distinctWords returns n words that every analyzer keeps as they are
// (consonants only: no stemmer touches them, no stop list holds them).
func distinctWords(n int) []string {
	const letters = "bcdfgkmptvz"
	words := make([]string, n)
	for i := range words {
		words[i] = "q" + string(letters[i/len(letters)]) + string(letters[i%len(letters)])
	}
	return words
}

// TestRecallTermCap: up to memory.MaxQueryTerms distinct terms pass; one more
// is invalid and names both numbers; repeated words, in any case, count once;
// function words of either language do not count; a refused query leaves no
// search-log row.
func TestRecallTermCap(t *testing.T) {
	env := servicetest.New(t, service.Options{RecallRate: -1})
	_, key := env.Key(t, "w", "p", "agent", memory.RoleRead)
	words := distinctWords(memory.MaxQueryTerms + 1)
	upper := func(ws []string) []string {
		out := slices.Clone(ws)
		for i := range out {
			out[i] = strings.ToUpper(out[i])
		}
		return out
	}
	functionWords := strings.Fields("the and of is what der die das und ist nicht with")
	cases := []struct {
		name  string
		words []string
		ok    bool
	}{
		{"31", words[:31], true},
		{"32", words[:32], true},
		{"33", words[:33], false},
		{"32 repeated", slices.Concat(words[:32], upper(words[:32]), words[:32]), true},
		{"32 and function words", slices.Concat(functionWords, words[:32], functionWords), true},
		{"33 among repeats and function words", slices.Concat(words[:32], functionWords, words[:32], words[32:33]), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := env.Svc.Recall(ctx, key, service.RecallRequest{Query: strings.Join(c.words, " ")})
			switch {
			case c.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case !c.ok && (err == nil || err.Error() != "invalid: query has 33 distinct search terms; at most 32 are allowed"):
				t.Fatalf("got %v, want invalid naming 33 and 32", err)
			}
		})
	}
	env.Svc.FlushSearchLog()
	rows, err := env.Store.SearchRows(ctx, key.First().Project, memory.LogFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("search log has %d rows, want 4 (the refused queries leave none)", len(rows))
	}
}

// TestRecallRateIsChargedToTheFirstKey: a caller of several keys recalls at
// its first key's rate whichever of its projects it names, as the HTTP
// per-key limits charge the first key: naming the projects one by one is no
// way to a rate per project.
func TestRecallRateIsChargedToTheFirstKey(t *testing.T) {
	now := time.Now()
	env := servicetest.New(t, service.Options{RecallRate: 2, RecallBurst: 3, Now: func() time.Time { return now }})
	ta, a := env.Key(t, "w", "a", "alice", memory.RoleRead)
	tb, _ := env.Key(t, "w", "b", "alice", memory.RoleRead)
	c := env.Caller(t, ta, tb)
	for i, p := range []string{"w/b", "", "w/a"} {
		if _, err := env.Svc.Recall(ctx, c, service.RecallRequest{Project: p, Query: "x"}); err != nil {
			t.Fatalf("recall %d of the burst (project %q): %v", i+1, p, err)
		}
	}
	want := fmt.Sprintf("budget_exhausted: key %d (alice) may recall 2 times per second; retry in 1 s", a.First().ID)
	for _, p := range []string{"w/b", "", "w/a"} {
		if _, err := env.Svc.Recall(ctx, c, service.RecallRequest{Project: p, Query: "x"}); err == nil || err.Error() != want {
			t.Errorf("recall past the burst (project %q): %v, want %q", p, err, want)
		}
		if _, err := env.Svc.Search(ctx, c, memory.ProjectRef{Workspace: "w", Project: "b"}, memory.SearchQuery{Text: "x"}); err == nil || err.Error() != want {
			t.Errorf("web search of w/b past the burst: %v, want %q", err, want)
		}
	}
}
