package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
)

// Invariant 1 (docs/architecture.md#invariant-1-one-writer-per-workspace): the
// projects of a workspace share its one writer connection, and the file is in WAL
// mode.
func TestInvariant1SharedWriterAndWAL(t *testing.T) {
	s := openTest(t)
	a := ensure(t, s, "team", "alpha")
	b := ensure(t, s, "team", "beta")
	put(t, s, a, "x", "in alpha")
	put(t, s, b, "x", "in beta")

	st := s.Stats()
	if len(st.Workspaces) != 1 {
		t.Fatalf("open workspace pools = %d, want 1 shared by both projects: %+v", len(st.Workspaces), st.Workspaces)
	}
	ps := st.Workspaces["team"]
	if ps.WriterMaxOpen != 1 || ps.WriterOpen > 1 {
		t.Fatalf("writer pool = %+v, want exactly one writer connection", ps)
	}

	var mode string
	if err := rawDB(t, s.WorkspaceFile("team")).QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Fatalf("journal_mode = %q, want wal", mode)
	}
	// Both projects' rows live in the one file.
	var n int
	if err := rawDB(t, s.WorkspaceFile("team")).QueryRow("SELECT count(DISTINCT project) FROM versions").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("projects in team.db = %d, want 2", n)
	}
}

// Invariant 1 (docs/architecture.md#invariant-1-one-writer-per-workspace): reads
// proceed while the writer holds an open write transaction, and they see the last
// committed state, not the pending one.
func TestInvariant1ReadsDoNotWaitForWriter(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "team", "alpha")
	put(t, s, ref, "doc", "v1")
	g := installGate(t, s)
	g.arm()

	done := make(chan error, 1)
	go func() {
		_, err := s.Append(context.Background(), ref, memory.Write{Slug: "doc", Content: "v2", Agent: "w"})
		done <- err
	}()
	g.waitEntered(t) // the writer is now inside BEGIN IMMEDIATE … (no COMMIT yet)

	// If reads waited for the writer these would block until the deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, latest, err := s.Get(ctx, ref, "doc", 0)
	if err != nil {
		t.Fatalf("Get during write: %v", err)
	}
	if v.Content != "v1" || latest != 1 {
		t.Fatalf("Get during write = %q latest %d, want the committed v1", v.Content, latest)
	}
	if _, _, err := s.List(ctx, ref, memory.ListQuery{}); err != nil {
		t.Fatalf("List during write: %v", err)
	}
	if _, err := s.CountWritesSince(ctx, ref, time.Time{}); err != nil {
		t.Fatalf("CountWritesSince during write: %v", err)
	}
	if _, err := s.ListProjects(ctx); err != nil {
		t.Fatalf("ListProjects during write: %v", err)
	}

	g.open()
	if err := <-done; err != nil {
		t.Fatalf("held write: %v", err)
	}
	if _, latest, _ := s.Get(ctx, ref, "doc", 0); latest != 2 {
		t.Fatalf("latest after commit = %d, want 2", latest)
	}
}

// Invariant 1 (docs/architecture.md#invariant-1-one-writer-per-workspace): 32
// goroutines mixing writes to 3 projects of one workspace with reads never see
// "database is locked" (nor any other error).
func TestInvariant1NoDatabaseLocked(t *testing.T) {
	s := openTest(t)
	refs := []memory.ProjectRef{ensure(t, s, "team", "p1"), ensure(t, s, "team", "p2"), ensure(t, s, "team", "p3")}
	var wg sync.WaitGroup
	errs := make(chan error, 32*40)
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := range 40 {
				ref := refs[(g+i)%3]
				slug := fmt.Sprintf("s%d", i%7)
				var err error
				switch i % 4 {
				case 0, 1:
					_, err = s.Append(ctx, ref, memory.Write{Slug: slug, Content: "c", Agent: "a"})
				case 2:
					_, _, err = s.Get(ctx, ref, slug, 0)
					if memory.ErrorCode(err) == memory.CodeNotFound {
						err = nil
					}
				case 3:
					_, _, err = s.List(ctx, ref, memory.ListQuery{Limit: 5})
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if isLocked(err) {
			t.Fatalf("database is locked: %v", err)
		}
		t.Fatalf("unexpected error: %v", err)
	}
}

// Invariant 2
// (docs/architecture.md#invariant-2-one-version-per-remember-no-gaps): under
// heavy concurrency every successful append creates exactly one version; per slug
// the versions are 1..n without gaps or duplicates, and conflicting writes create
// nothing.
func TestInvariant2VersionsWithoutGaps(t *testing.T) {
	checkVersionsWithoutGaps(t, openTest(t))
}

// With batches of at most three writes, the writer's batches fill up while
// it gathers more (run's fill), and every write still gets its own version.
func TestInvariant2WithTinyBatches(t *testing.T) {
	s, err := Open(t.TempDir(), Options{MaxBatch: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	checkVersionsWithoutGaps(t, s)
}

// checkVersionsWithoutGaps has 32 goroutines append 50 versions each to five
// slugs, some with expected versions, then checks versions 1..n per slug, one
// per successful append, and one audit row each.
func checkVersionsWithoutGaps(t *testing.T, s *Store) {
	ref := ensure(t, s, "team", "alpha")
	slugs := []string{"a", "b", "c", "d", "e"}
	var ok, conflicts atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 32*50)
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := range 50 {
				w := memory.Write{Slug: slugs[(g+i)%len(slugs)], Content: fmt.Sprintf("g%d i%d", g, i), Agent: "a"}
				if i%3 == 0 {
					// Optimistic writers: some of these lose the race and must conflict.
					_, latest, err := s.Get(ctx, ref, w.Slug, 0)
					if err != nil && memory.ErrorCode(err) != memory.CodeNotFound {
						errs <- err
						return
					}
					w.ExpectedVersion = intp(latest)
				}
				_, err := s.Append(ctx, ref, w)
				switch memory.ErrorCode(err) {
				case "":
					ok.Add(1)
				case memory.CodeConflict:
					conflicts.Add(1)
				default:
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	sum := 0
	for _, slug := range slugs {
		h, err := s.History(context.Background(), ref, slug, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for i, vi := range h {
			if want := len(h) - i; vi.Version != want {
				t.Fatalf("%s: history[%d] = v%d, want v%d (gap or duplicate)", slug, i, vi.Version, want)
			}
		}
		_, latest, _ := s.Get(context.Background(), ref, slug, 0)
		if latest != len(h) {
			t.Fatalf("%s: latest %d but %d versions", slug, latest, len(h))
		}
		sum += len(h)
	}
	if int64(sum) != ok.Load() {
		t.Fatalf("versions = %d, successful appends = %d (conflicts %d)", sum, ok.Load(), conflicts.Load())
	}
	audits, _ := s.CountWritesSince(context.Background(), ref, time.Time{})
	if int64(audits) != ok.Load() {
		t.Fatalf("audit rows = %d, successful appends = %d", audits, ok.Load())
	}
	t.Logf("ok %d, conflicts %d, stats %+v", ok.Load(), conflicts.Load(), s.Stats())
}

// Failing writes in the middle of one batch are rolled back alone: they get
// their own error, create no version, and their batch-mates commit.
func TestBatchIsolatesFailingWrites(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "team", "alpha")
	put(t, s, ref, "existing", "v1")
	g := installGate(t, s)
	g.arm()
	first := make(chan error, 1)
	go func() {
		_, err := s.Append(context.Background(), ref, memory.Write{Slug: "first", Agent: "a"})
		first <- err
	}()
	g.waitEntered(t)

	writes := []struct {
		w    memory.Write
		code memory.Code
	}{
		{memory.Write{Slug: "good-1", Content: "g1"}, ""},
		{memory.Write{Slug: "existing", Content: "stale", ExpectedVersion: intp(5)}, memory.CodeConflict},
		{memory.Write{Slug: "good-2", Content: "g2"}, ""},
		{memory.Write{Slug: "never", Deleted: true}, memory.CodeNotFound},
		{memory.Write{Slug: "existing", Content: "v2", ExpectedVersion: intp(1)}, ""},
		{memory.Write{Slug: "fresh", Content: "x", ExpectedVersion: intp(3)}, memory.CodeConflict},
	}
	results := make([]chan error, len(writes))
	for i, c := range writes {
		results[i] = make(chan error, 1)
		go func() { _, err := s.Append(context.Background(), ref, c.w); results[i] <- err }()
		waitQueued(t, s, "team", i+1) // keeps the queue order equal to the table order
	}
	// A write that fails after it has already written rows: only its
	// savepoint rollback keeps them out of the committed batch.
	ws, _ := s.workspace(context.Background(), "team", false)
	partial := make(chan error, 1)
	go func() {
		_, err := ws.submit(context.Background(), func(tx *sql.Tx) (any, error) {
			if _, err := applyWrite(tx, ref.Project, memory.Write{Slug: "partial", Content: "p"}, "[]", defaultSettings); err != nil {
				return nil, err
			}
			return nil, errors.New("fails after writing")
		})
		partial <- err
	}()
	waitQueued(t, s, "team", len(writes)+1)
	before := s.Stats()
	g.open()
	if err := <-partial; err == nil || err.Error() != "fails after writing" {
		t.Fatalf("partial write: %v", err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for i, c := range writes {
		err := <-results[i]
		if memory.ErrorCode(err) != c.code {
			t.Fatalf("write %d (%s): err %v, want code %q", i, c.w.Slug, err, c.code)
		}
	}
	after := s.Stats()
	// One batch for the held write, one for all seven queued behind it.
	if d := after.Batches - before.Batches; d != 2 {
		t.Fatalf("the held write and the %d queued writes took %d batches, want 2", len(writes), d)
	}
	if d := after.Writes - before.Writes; d != 4 {
		t.Fatalf("committed writes = %d, want 4 (first, good-1, good-2, existing v2)", d)
	}
	ctx := context.Background()
	for _, slug := range []string{"never", "fresh", "partial"} {
		if _, _, err := s.Get(ctx, ref, slug, 0); memory.ErrorCode(err) != memory.CodeNotFound {
			t.Fatalf("%s exists after a failed write: %v", slug, err)
		}
	}
	v, latest, err := s.Get(ctx, ref, "existing", 0)
	if err != nil || latest != 2 || v.Content != "v2" {
		t.Fatalf("existing = %q latest %d err %v, want v2", v.Content, latest, err)
	}
	if n, _ := s.CountWritesSince(ctx, ref, time.Time{}); n != 5 {
		t.Fatalf("audit rows = %d, want 5 (existing v1, first, good-1, good-2, existing v2)", n)
	}
}

// Group commit: writes that wait while the writer is busy share
// transactions. The writer is held on one write while n more queue up on the
// same slug; once it is released they must commit in ceil(n/MaxBatch)
// batches (plus the held one), each caller getting its own version, and the
// versions 1..n+1 without gaps.
func TestGroupCommitBatches(t *testing.T) {
	const maxBatch, n = 16, 64 // the queue holds 4×MaxBatch, so all n fit
	s, err := Open(t.TempDir(), Options{MaxBatch: maxBatch})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ref := ensure(t, s, "team", "alpha")
	g := installGate(t, s)
	g.arm()
	type outcome struct {
		res memory.WriteResult
		err error
	}
	held := make(chan outcome, 1)
	go func() {
		res, err := s.Append(context.Background(), ref, memory.Write{Slug: "doc", Content: "held", Agent: "a"})
		held <- outcome{res, err}
	}()
	g.waitEntered(t)
	results := make([]chan outcome, n)
	for i := range n {
		results[i] = make(chan outcome, 1)
		go func() {
			res, err := s.Append(context.Background(), ref, memory.Write{Slug: "doc", Content: fmt.Sprintf("w%d", i), Agent: "a"})
			results[i] <- outcome{res, err}
		}()
	}
	waitQueued(t, s, "team", n)
	before := s.Stats()
	g.open()

	if o := <-held; o.err != nil || o.res.Version != 1 {
		t.Fatalf("held write: version %d, err %v; want version 1", o.res.Version, o.err)
	}
	seen := map[int]int{} // version → writer
	for i := range n {
		o := <-results[i]
		if o.err != nil {
			t.Fatalf("write %d: %v", i, o.err)
		}
		if w, dup := seen[o.res.Version]; dup {
			t.Fatalf("writes %d and %d both got version %d", w, i, o.res.Version)
		}
		seen[o.res.Version] = i
		// Each caller gets its own result: its version holds its own content.
		v, _, err := s.Get(context.Background(), ref, "doc", o.res.Version)
		if err != nil || v.Content != fmt.Sprintf("w%d", i) {
			t.Fatalf("write %d got version %d, which holds %q (err %v)", i, o.res.Version, v.Content, err)
		}
	}
	for v := 2; v <= n+1; v++ {
		if _, ok := seen[v]; !ok {
			t.Fatalf("no write got version %d: versions %v", v, seen)
		}
	}
	after := s.Stats()
	writes, batches := after.Writes-before.Writes, after.Batches-before.Batches
	if writes != n+1 {
		t.Fatalf("committed writes = %d, want %d", writes, n+1)
	}
	if want := int64(1 + (n+maxBatch-1)/maxBatch); batches > want {
		t.Fatalf("%d writes took %d batches, want at most %d (the held one, then %d queued writes in batches of %d)",
			writes, batches, want, n, maxBatch)
	}
	t.Logf("%d writes in %d batches", writes, batches)
}

// A write whose context is cancelled while it waits in the queue is not applied.
func TestCancelledQueuedWriteIsNotApplied(t *testing.T) {
	s := openTest(t)
	ref := ensure(t, s, "team", "alpha")
	g := installGate(t, s)
	g.arm()
	go func() { _, _ = s.Append(context.Background(), ref, memory.Write{Slug: "holder", Agent: "a"}) }()
	g.waitEntered(t)
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() { _, err := s.Append(ctx, ref, memory.Write{Slug: "cancelled", Agent: "a"}); res <- err }()
	waitQueued(t, s, "team", 1)
	cancel()
	g.open()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled write: err %v, want context.Canceled", err)
	}
	if _, _, err := s.Get(context.Background(), ref, "cancelled", 0); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Fatalf("cancelled write was applied: %v", err)
	}
}

// Close commits what is already queued before it closes the files.
func TestCloseDrainsQueue(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{Synchronous: "full"})
	if err != nil {
		t.Fatal(err)
	}
	ref := ensure(t, s, "team", "alpha")
	g := installGate(t, s)
	g.arm()
	go func() { _, _ = s.Append(context.Background(), ref, memory.Write{Slug: "holder", Agent: "a"}) }()
	g.waitEntered(t)
	const n = 10
	res := make(chan error, n)
	for i := range n {
		go func() {
			_, err := s.Append(context.Background(), ref, memory.Write{Slug: fmt.Sprintf("q%d", i), Agent: "a"})
			res <- err
		}()
	}
	waitQueued(t, s, "team", n)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	g.open()
	for range n {
		if err := <-res; err != nil {
			t.Fatalf("queued write failed at Close: %v", err)
		}
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(context.Background(), ref, memory.Write{Slug: "late", Agent: "a"}); memory.ErrorCode(err) != memory.CodeUnavailable {
		t.Fatalf("append after Close: %v, want unavailable", err)
	}

	s2 := openAt(t, dir)
	l, _, err := s2.List(context.Background(), ref, memory.ListQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != n+1 {
		t.Fatalf("after reopen %d entries, want %d", len(l), n+1)
	}
}

// Search-log rows go through the writer and land in their project's file.
func TestAppendSearchLog(t *testing.T) {
	s := openTest(t)
	a := ensure(t, s, "team", "alpha")
	b := ensure(t, s, "other", "beta")
	rows := []memory.SearchLogRow{
		{Project: a, Agent: "x", Query: "q1", Hits: 3, DurationMS: 1.5},
		{Project: b, Agent: "y", Query: "q2", Hits: 0, DurationMS: 0.2},
		{Project: a, Agent: "x", Query: "q3", Hits: 1, DurationMS: 2},
	}
	if err := s.AppendSearchLog(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
	got, err := s.SearchRows(context.Background(), a, memory.LogFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Query != "q3" || got[1].Hits != 3 {
		t.Fatalf("search log of alpha = %+v", got)
	}
	bad := []memory.SearchLogRow{{Project: a, Query: "ok"}, {Project: memory.ProjectRef{Workspace: "team", Project: "nope"}, Query: "x"}}
	wantCode(t, s.AppendSearchLog(context.Background(), bad), memory.CodeNotFound)
	if got, _ := s.SearchRows(context.Background(), a, memory.LogFilter{Limit: 10}); len(got) != 2 {
		t.Fatalf("bad batch wrote %d rows", len(got)-2)
	}
}
