package service_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/search"
	"munin/internal/service"
	"munin/internal/servicetest"
	"munin/internal/store"
)

// TestChangesUnderConcurrentWrites: 16 writers write across two projects
// (in two workspaces) while 4 readers page the feed with their cursors;
// each reader ends having read every acknowledged write exactly once, and
// each slug's versions in order (run with -race).
func TestChangesUnderConcurrentWrites(t *testing.T) {
	const writers, perWriter, readers = 16, 24, 4
	env := servicetest.New(t, service.Options{BudgetOff: true, RecallRate: -1})
	tokA, a := env.Key(t, "acme", "one", "wa", memory.RoleWrite)
	tokB, b := env.Key(t, "beta", "two", "wb", memory.RoleWrite)
	var wmu sync.Mutex
	written := map[string]bool{} // "project slug vN" of every acknowledged write
	var wg sync.WaitGroup
	done := make(chan struct{})
	for g := range writers {
		wg.Go(func() {
			for i := range perWriter {
				c, project := a, "acme/one"
				if (g+i)%2 == 1 {
					c, project = b, "beta/two"
				}
				res, err := env.Svc.Remember(ctx, c, service.RememberRequest{Project: project,
					Slug: fmt.Sprintf("g%02d/s%d", g, i%3), Content: "x"})
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
	go func() { wg.Wait(); close(done) }()

	seen := make([][]service.Change, readers)
	var rg sync.WaitGroup
	for r := range readers {
		c := env.Caller(t, tokA, tokB)
		rg.Go(func() {
			wake, stop := env.Svc.ChangeSignal(c)
			defer stop()
			since, finished := "", false
			for range 100 * maxPages {
				res, err := env.Svc.Changes(ctx, c, service.ChangesRequest{Since: since, Limit: 1 + r*7})
				if err != nil {
					t.Errorf("reader %d: %v", r, err)
					return
				}
				since = res.NextCursor
				seen[r] = append(seen[r], res.Changes...)
				if len(res.Changes) > 0 {
					continue
				}
				if finished {
					return // an empty page read after every write was acknowledged
				}
				select {
				case <-done:
					finished = true
				case <-wake:
				case <-time.After(20 * time.Millisecond): // through the hop no signal comes
				}
			}
			t.Errorf("reader %d did not reach the end", r)
		})
	}
	rg.Wait()
	if len(written) != writers*perWriter {
		t.Fatalf("%d writes acknowledged, want %d", len(written), writers*perWriter)
	}
	for r, changes := range seen {
		got := map[string]int{}
		last := map[string]int{} // project slug → last version read
		for _, c := range changes {
			k := fmt.Sprintf("%s %s v%d", c.Project, c.Slug, c.Version)
			got[k]++
			if got[k] == 2 {
				t.Errorf("reader %d read %s twice", r, k)
			}
			if ps := c.Project + " " + c.Slug; c.Version != last[ps]+1 {
				t.Errorf("reader %d: %s v%d after v%d", r, ps, c.Version, last[ps])
			} else {
				last[ps] = c.Version
			}
		}
		for k := range written {
			if got[k] == 0 {
				t.Errorf("reader %d missed %s", r, k)
			}
		}
		if len(got) != len(written) {
			t.Errorf("reader %d read %d distinct changes, %d were written", r, len(got), len(written))
		}
	}
}

// stack is a store, index and service over dir, closed by close.
type stack struct {
	st  *store.Store
	reg *search.Registry
	svc *service.Service
}

func openStack(t *testing.T, dir string) *stack {
	t.Helper()
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := search.NewRegistry(st, search.Options{})
	return &stack{st, reg, service.New(st, reg, service.Options{BudgetOff: true})}
}

func (s *stack) close(t *testing.T) {
	t.Helper()
	if err := s.svc.Close(); err != nil {
		t.Error(err)
	}
	if err := s.reg.Close(); err != nil {
		t.Error(err)
	}
	if err := s.st.Close(); err != nil {
		t.Error(err)
	}
}

// TestChangesCursorSurvivesRestart: a cursor made before the server
// stopped reads on after it starts again, with nothing repeated; once the
// workspace file is deleted and made anew, the same cursor is invalid,
// expired, instead of skipping the new file's changes.
func TestChangesCursorSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s := openStack(t, dir)
	token, _, err := s.svc.CreateKey(context.Background(), memory.ProjectRef{Workspace: "acme", Project: "one"}, "ann", memory.RoleWrite)
	if err != nil {
		t.Fatal(err)
	}
	auth := func(s *stack) memory.Caller {
		c, err := s.svc.Authenticate(ctx, token)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := auth(s)
	feedWrite(t, s.svc, c, "", "before")
	_, cursor := pageAll(t, s.svc, c, "", 10)
	s.close(t)

	s = openStack(t, dir)
	c = auth(s)
	feedWrite(t, s.svc, c, "", "after")
	got, cursor2 := pageAll(t, s.svc, c, cursor, 10)
	if want := []string{"acme/one remember after v1"}; strings.Join(lines(got), ",") != strings.Join(want, ",") {
		t.Fatalf("after a restart: %v, want %v", lines(got), want)
	}
	s.close(t)

	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(filepath.Join(dir, "acme.db"+suffix)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	s = openStack(t, dir)
	defer s.close(t)
	c = auth(s)
	feedWrite(t, s.svc, c, "", "anew")
	for _, cur := range []string{cursor, cursor2} {
		_, err := s.svc.Changes(ctx, c, service.ChangesRequest{Since: cur})
		if memory.ErrorCode(err) != memory.CodeInvalid || !strings.Contains(err.Error(), "expired or foreign cursor: workspace acme") {
			t.Errorf("a cursor of the deleted file: %v, want invalid, expired", err)
		}
	}
}
