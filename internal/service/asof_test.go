package service_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// stamp renders t as an as_of value, to the nanosecond.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func TestGetAsOfReadsTheVersionOfThen(t *testing.T) {
	clock := &movableClock{now: time.Now().UTC()}
	env := servicetest.New(t, service.Options{Now: clock.Now})
	_, key := env.Key(t, "w", "p", "agent", memory.RoleWrite)
	v1 := rememberSim(t, env.Svc, key, service.RememberRequest{Slug: "a", Content: "first"})
	v2 := rememberSim(t, env.Svc, key, service.RememberRequest{Slug: "a", Content: "second",
		ValidUntil: clock.Now().Add(time.Hour).Format(time.RFC3339)})
	by := rememberSim(t, env.Svc, key, service.RememberRequest{Slug: "b", Content: "replaces a", Supersedes: []string{"a"}})
	gone, err := env.Svc.Forget(ctx, key, service.ForgetRequest{Slug: "a"})
	if err != nil {
		t.Fatal(err)
	}
	clock.add(2 * time.Hour) // the clock may run ahead of the store's stamps: as_of up to it is allowed

	between := v1.CreatedAt.Add(v2.CreatedAt.Sub(v1.CreatedAt) / 2)
	for _, c := range []struct {
		name, asOf, content string
		version             int
		expired             bool
		by                  string
	}{
		{"at the first version", stamp(v1.CreatedAt), "first", 1, false, ""},
		{"between two versions", stamp(between), "first", 1, false, ""},
		{"at the second", stamp(v2.CreatedAt), "second", 2, false, ""},
		{"superseded", stamp(by.CreatedAt), "second", 2, false, "b"},
		{"forgotten by then", stamp(clock.Now()), "", 0, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := env.Svc.Get(ctx, key, service.GetRequest{Slug: "a", AsOf: c.asOf})
			if c.version == 0 {
				if memory.ErrorCode(err) != memory.CodeNotFound {
					t.Fatalf("as of after the forget: %+v, %v, want not_found", e, err)
				}
				return
			}
			if err != nil || e.Version != c.version || e.Content != c.content || e.LatestVersion != c.version ||
				e.Expired != c.expired || e.SupersededBy != c.by {
				t.Fatalf("got %+v, %v; want v%d %q expired %v superseded_by %q", e, err, c.version, c.content, c.expired, c.by)
			}
		})
	}
	// expired as of a time: an entry of its own, past its valid_until then.
	x := rememberSim(t, env.Svc, key, service.RememberRequest{Slug: "x", Content: "short-lived",
		ValidUntil: clock.Now().Add(time.Minute).Format(time.RFC3339)})
	clock.add(time.Hour)
	e, err := env.Svc.Get(ctx, key, service.GetRequest{Slug: "x", AsOf: stamp(clock.Now())})
	if err != nil || !e.Expired {
		t.Fatalf("x as of after its valid_until: %+v, %v, want expired", e, err)
	}
	if e, err := env.Svc.Get(ctx, key, service.GetRequest{Slug: "x", AsOf: stamp(x.CreatedAt)}); err != nil || e.Expired {
		t.Fatalf("x as of its writing: %+v, %v, want not expired", e, err)
	}

	for _, c := range []struct {
		name, asOf string
		code       memory.Code
	}{
		{"before the first version", stamp(v1.CreatedAt.Add(-time.Nanosecond)), memory.CodeNotFound},
		{"forgotten then", stamp(gone.CreatedAt), memory.CodeNotFound},
		{"in the future", stamp(clock.Now().Add(time.Minute)), memory.CodeInvalid},
		{"malformed", "yesterday", memory.CodeInvalid},
	} {
		if _, err := env.Svc.Get(ctx, key, service.GetRequest{Slug: "a", AsOf: c.asOf}); memory.ErrorCode(err) != c.code {
			t.Errorf("get as of %s (%s): %v, want %s", c.name, c.asOf, err, c.code)
		}
	}
	if _, err := env.Svc.Get(ctx, key, service.GetRequest{Slug: "a", Version: 2, AsOf: stamp(v1.CreatedAt)}); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("version 2 as of version 1's time: %v, want not_found", err)
	}
}

func TestListAndHistoryAsOf(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	_, key := env.Key(t, "w", "p", "agent", memory.RoleWrite)
	rememberSim(t, env.Svc, key, service.RememberRequest{Slug: "a", Content: "one"})
	t1 := rememberSim(t, env.Svc, key, service.RememberRequest{Slug: "b", Content: "two"}).CreatedAt
	t2 := rememberSim(t, env.Svc, key, service.RememberRequest{Slug: "c", Content: "three", Supersedes: []string{"a"}}).CreatedAt
	rememberSim(t, env.Svc, key, service.RememberRequest{Slug: "b", Content: "two, again"})
	if _, err := env.Svc.Forget(ctx, key, service.ForgetRequest{Slug: "c"}); err != nil {
		t.Fatal(err)
	}

	listed := func(asOf string) string {
		t.Helper()
		l, err := env.Svc.List(ctx, key, service.ListRequest{AsOf: asOf})
		if err != nil {
			t.Fatalf("list as of %q: %v", asOf, err)
		}
		var out []string
		for _, e := range l.Entries {
			s := fmt.Sprintf("%s@%d", e.Slug, e.Version)
			if e.State != "" {
				s += ":" + e.State
			}
			out = append(out, s)
		}
		return strings.Join(out, " ")
	}
	for _, c := range []struct{ asOf, want string }{
		{stamp(t1), "a@1 b@1"},
		{stamp(t2), "a@1:superseded b@1 c@1"},
		{"", "a@1:superseded b@2"},
	} {
		if got := listed(c.asOf); got != c.want {
			t.Errorf("list as of %q: %q, want %q", c.asOf, got, c.want)
		}
	}
	if _, err := env.Svc.List(ctx, key, service.ListRequest{AsOf: stamp(time.Now().Add(time.Hour))}); memory.ErrorCode(err) != memory.CodeInvalid {
		t.Errorf("list as of the future: %v, want invalid", err)
	}

	h, err := env.Svc.History(ctx, key, service.HistoryRequest{Slug: "b", AsOf: stamp(t2)})
	if err != nil || len(h.Versions) != 1 || h.Versions[0].Version != 1 {
		t.Fatalf("history of b as of before its second version: %+v, %v", h.Versions, err)
	}
	if h, err := env.Svc.History(ctx, key, service.HistoryRequest{Slug: "b"}); err != nil || len(h.Versions) != 2 {
		t.Fatalf("history of b now: %+v, %v", h.Versions, err)
	}
	if _, err := env.Svc.History(ctx, key, service.HistoryRequest{Slug: "c", AsOf: stamp(t1)}); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("history of c before its first version: %v, want not_found", err)
	}
	if _, err := env.Svc.History(ctx, key, service.HistoryRequest{Slug: "b", AsOf: stamp(time.Now().Add(time.Hour))}); memory.ErrorCode(err) != memory.CodeInvalid {
		t.Errorf("history as of the future: %v, want invalid", err)
	}
}

// TestRecallNeverReturnsASupersededEntry writes chains of entries, each
// superseding the one before, while others recall: no recall returns an
// entry whose supersession was acknowledged before it started.
func TestRecallNeverReturnsASupersededEntry(t *testing.T) {
	env := servicetest.New(t, service.Options{BudgetOff: true, RecallRate: -1, RecallConcurrency: -1})
	_, key := env.Key(t, "w", "p", "agent", memory.RoleWrite)
	const writers, chain, recallers = 4, 15, 2
	var mu sync.Mutex
	superseded := map[string]bool{}
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, writers+recallers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prev := ""
			for k := range chain {
				slug := fmt.Sprintf("chain/%d-%02d", w, k)
				req := service.RememberRequest{Slug: slug, Content: fmt.Sprintf("osprey report %d of writer %d", k, w)}
				if prev != "" {
					req.Supersedes = []string{prev}
				}
				if _, err := env.Svc.Remember(ctx, key, req); err != nil {
					errs <- fmt.Errorf("remember %s: %w", slug, err)
					return
				}
				if prev != "" {
					mu.Lock()
					superseded[prev] = true
					mu.Unlock()
				}
				prev = slug
			}
		}()
	}
	var rg sync.WaitGroup
	for range recallers {
		rg.Add(1)
		go func() {
			defer rg.Done()
			for i := 0; i < 500; i++ { // bounded; ends when the writers are done
				select {
				case <-done:
					return
				default:
				}
				mu.Lock()
				before := make(map[string]bool, len(superseded))
				for s := range superseded {
					before[s] = true
				}
				mu.Unlock()
				res, err := env.Svc.Recall(ctx, key, service.RecallRequest{Query: "osprey report", Limit: 50})
				if err != nil {
					errs <- err
					return
				}
				for _, h := range res.Hits {
					if before[h.Slug] || h.State != "" {
						errs <- fmt.Errorf("recall returned %s (state %q), superseded before it started", h.Slug, h.State)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	rg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// At the end exactly the last entry of each chain is found.
	got := recallSlugs(t, env.Svc, key, service.RecallRequest{Query: "osprey report", Limit: 50})
	if len(got) != writers {
		t.Fatalf("final recall: %v, want the %d chain heads", got, writers)
	}
	for _, s := range got {
		if !strings.HasSuffix(s, fmt.Sprintf("-%02d", chain-1)) {
			t.Fatalf("final recall: %v, want only the chain heads", got)
		}
	}
}
