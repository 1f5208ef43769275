package service_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// watchLog collects what one watcher hears.
type watchLog struct {
	mu      sync.Mutex
	seen    map[string]int // "project slug vN" → times heard
	order   map[string]int // "project slug" → last version heard
	resyncs int
	bad     []string
}

func newWatchLog() *watchLog { return &watchLog{seen: map[string]int{}, order: map[string]int{}} }

func (l *watchLog) hear(ev service.WatchEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ev.Resync {
		l.resyncs++
	}
	for _, c := range ev.Changes {
		l.seen[fmt.Sprintf("%s %s v%d", c.Project, c.Slug, c.Version)]++
		k := c.Project + " " + c.Slug
		if c.Version <= l.order[k] {
			l.bad = append(l.bad, fmt.Sprintf("%s v%d after v%d", k, c.Version, l.order[k]))
		}
		l.order[k] = c.Version
	}
}

func (l *watchLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

// TestWatchUnderConcurrentWrites: 12 writers write across two projects in
// two workspaces while 100 watchers watch them (run with -race); each
// watcher hears every acknowledged write of its project exactly once, each
// slug's versions in order, nothing of the other project, and no resync;
// once all stopped, nothing is watched.
func TestWatchUnderConcurrentWrites(t *testing.T) {
	const writers, perWriter, watchers = 12, 20, 100
	env := servicetest.New(t, service.Options{BudgetOff: true, RecallRate: -1})
	_, a := env.Key(t, "acme", "one", "wa", memory.RoleWrite)
	_, b := env.Key(t, "beta", "two", "wb", memory.RoleWrite)
	_, ra := env.Key(t, "acme", "one", "reader", memory.RoleRead)
	refs := []memory.ProjectRef{{Workspace: "acme", Project: "one"}, {Workspace: "beta", Project: "two"}}
	logs := make([]*watchLog, watchers)
	var stops []func()
	for i := range watchers {
		logs[i] = newWatchLog()
		c := a
		if i%2 == 1 {
			c = b
		}
		if i%10 == 0 {
			c = ra // a read key watches too
		}
		stop, err := env.Svc.Watch(c, refs[i%2], logs[i].hear)
		if err != nil {
			t.Fatal(err)
		}
		stops = append(stops, stop)
	}
	if n := env.Svc.Watchers(); n != watchers {
		t.Fatalf("Watchers() = %d, want %d", n, watchers)
	}
	var wmu sync.Mutex
	written := map[string]bool{}
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range perWriter {
				c, project := a, "acme/one"
				if (g+i)%2 == 1 {
					c, project = b, "beta/two"
				}
				res, err := env.Svc.Remember(ctx, c, service.RememberRequest{Project: project, Slug: fmt.Sprintf("g%02d/s%d", g, i%3), Content: "x"})
				if err != nil {
					t.Errorf("writer %d: %v", g, err)
					return
				}
				wmu.Lock()
				written[fmt.Sprintf("%s %s v%d", project, res.Slug, res.Version)] = true
				wmu.Unlock()
			}
		})
	}
	wg.Wait()
	perProject := map[string]int{}
	for w := range written {
		perProject[w[:8]]++
	}
	waits := 600 // up to 30 s in all for the hub to deliver
	for i, l := range logs {
		want := perProject[refs[i%2].String()]
		for ; waits > 0 && l.count() < want; waits-- {
			time.Sleep(50 * time.Millisecond)
		}
		l.mu.Lock()
		for k, n := range l.seen {
			if n != 1 || !written[k] || k[:8] != refs[i%2].String() {
				t.Errorf("watcher %d heard %q %d times (written: %v)", i, k, n, written[k])
			}
		}
		if len(l.seen) != want || len(l.bad) > 0 || l.resyncs > 0 {
			t.Errorf("watcher %d of %s heard %d of %d writes, out of order %v, resyncs %d", i, refs[i%2], len(l.seen), want, l.bad, l.resyncs)
		}
		l.mu.Unlock()
	}
	for _, stop := range stops {
		stop()
	}
	if n := env.Svc.Watchers(); n != 0 {
		t.Errorf("Watchers() = %d after every stop, want 0", n)
	}
}

// TestWatchRefusesAndFilters: a project the caller holds no key for is
// forbidden in the same words whether it exists or not; a server-admin key
// watches nothing; a proposal and its rejection are never heard (a resource
// is what get returns), the approval is; after stop nothing is heard.
func TestWatchRefusesAndFilters(t *testing.T) {
	env := servicetest.New(t, service.Options{BudgetOff: true})
	_, a := env.Key(t, "acme", "one", "ann", memory.RoleWrite)
	_, admin := env.Key(t, "acme", "one", "boss", memory.RoleAdmin)
	_, prop := env.Key(t, "acme", "one", "pia", memory.RolePropose)
	_, _ = env.Key(t, "acme", "two", "other", memory.RoleWrite)
	hear := func(service.WatchEvent) {}
	_, errExists := env.Svc.Watch(a, memory.ProjectRef{Workspace: "acme", Project: "two"}, hear)
	_, errMissing := env.Svc.Watch(a, memory.ProjectRef{Workspace: "acme", Project: "nope"}, hear)
	if memory.ErrorCode(errExists) != memory.CodeForbidden || memory.PublicMessage(errExists) != memory.PublicMessage(errMissing) && memory.ErrorCode(errMissing) != memory.CodeForbidden {
		t.Errorf("watch without a key: %v / %v, want the same forbidden", errExists, errMissing)
	}
	l := newWatchLog()
	stop, err := env.Svc.Watch(a, memory.ProjectRef{Workspace: "acme", Project: "one"}, l.hear)
	if err != nil {
		t.Fatal(err)
	}
	res, err := env.Svc.Remember(ctx, prop, service.RememberRequest{Project: "acme/one", Slug: "p", Content: "proposed"})
	if err != nil || res.Proposal == "" {
		t.Fatalf("propose: %+v %v", res, err)
	}
	if _, err := env.Svc.Approve(ctx, admin, res.Proposal, service.ApproveRequest{}); err != nil {
		t.Fatal(err)
	}
	feedWrite(t, env.Svc, a, "acme/one", "last")
	for range 600 {
		if l.count() >= 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	feedWrite(t, env.Svc, a, "acme/one", "after-stop")
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.seen) != 2 || l.seen["acme/one p v1"] != 1 || l.seen["acme/one last v1"] != 1 {
		t.Errorf("heard %v, want the approval of p (v1) and last v1 only", l.seen)
	}
}
