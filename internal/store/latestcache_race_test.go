package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
)

// TestLatestCacheNeverAnswersOlderThanAnAcknowledgedWrite is invariant 3
// (docs/architecture.md#invariant-3-read-your-writes) with the latest-version
// cache under contention: writers remember and forget the same few slugs
// while readers read them with Get and LatestMany. Every read that starts
// after a write was acknowledged returns that version or a newer one, a
// writer reads its own write back, every (slug, version) read carries the
// content SQLite holds for it, and at the end the cache agrees with SQLite.
// A tiny cache evicts fences all the time; a cluster's acker answers after
// the writer moved on.
func TestLatestCacheNeverAnswersOlderThanAnAcknowledgedWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"large cache", Options{LatestCacheBytes: 4 << 20}},
		{"tiny cache", Options{LatestCacheBytes: 3 << 10}},
		{"cluster", Options{LatestCacheBytes: 4 << 20, Cluster: hooks{afterCommit: func(string) error {
			time.Sleep(50 * time.Microsecond)
			return nil
		}}}},
	} {
		t.Run(tc.name, func(t *testing.T) { raceLatestCache(t, tc.opts) })
	}
}

func raceLatestCache(t *testing.T, opts Options) {
	s := openAtWith(t, t.TempDir(), opts)
	ref := ensure(t, s, "ws", "p")
	ctx := context.Background()
	slugs := []string{"hot/a", "hot/b", "hot/c", "hot/d"}
	var acked [4]atomic.Int64 // per slug: the highest acknowledged version
	raise := func(i, version int) {
		for {
			cur := acked[i].Load()
			if int64(version) <= cur || acked[i].CompareAndSwap(cur, int64(version)) {
				return
			}
		}
	}
	var seen sync.Map // "slug@version" -> content read
	check := func(v memory.Version, atLeast int64, how string) error {
		if int64(v.Version) < atLeast {
			return fmt.Errorf("%s of %s: version %d, but %d was acknowledged before the read began", how, v.Slug, v.Version, atLeast)
		}
		if prev, dup := seen.LoadOrStore(fmt.Sprintf("%s@%d", v.Slug, v.Version), v.Content); dup && prev != v.Content {
			return fmt.Errorf("%s of %s v%d: content %q, earlier %q", how, v.Slug, v.Version, v.Content, prev)
		}
		return nil
	}

	const writers, readers, writes = 6, 6, 60
	write := func(w int) error {
		rng := rand.New(rand.NewPCG(uint64(w), 1))
		for n := range writes {
			i := rng.IntN(len(slugs))
			wr := memory.Write{Slug: slugs[i], Title: "t", Content: fmt.Sprintf("w%d-%d", w, n), Tags: []string{"t"}, Agent: "a"}
			wr.Deleted = rng.IntN(4) == 0
			res, err := s.Append(ctx, ref, wr)
			if wr.Deleted && memory.ErrorCode(err) == memory.CodeNotFound {
				continue // already forgotten, or never written
			}
			if err != nil {
				return err
			}
			raise(i, res.Version)
			v, _, err := s.Get(ctx, ref, slugs[i], 0)
			if err == nil {
				err = check(v, int64(res.Version), "read-your-write Get")
			}
			if err == nil && v.Version == res.Version && v.Deleted != wr.Deleted {
				err = fmt.Errorf("%s v%d: deleted %v, the write's %v", v.Slug, v.Version, v.Deleted, wr.Deleted)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	read := func(r int) error {
		var floor [4]int64
		for i := range slugs {
			floor[i] = acked[i].Load()
		}
		if r%2 == 0 {
			i := r % len(slugs)
			v, _, err := s.Get(ctx, ref, slugs[i], 0)
			if memory.ErrorCode(err) == memory.CodeNotFound && floor[i] == 0 {
				return nil
			}
			if err == nil {
				err = check(v, floor[i], "Get")
			}
			return err
		}
		got, err := s.LatestMany(ctx, ref, slugs)
		if err != nil {
			return err
		}
		for i, slug := range slugs {
			v, ok := got[slug]
			if !ok && floor[i] > 0 {
				return fmt.Errorf("LatestMany lost %s after version %d was acknowledged", slug, floor[i])
			} else if ok {
				if err := check(v, floor[i], "LatestMany"); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, err := range whileWriting(writers, readers, write, read) {
		t.Error(err)
	}
	if s.latest.hits.Load() == 0 {
		t.Error("the cache answered no read: the test did not exercise it")
	}
	// Every version read holds the content SQLite has for it, and the cache
	// ends where the file is.
	seen.Range(func(k, content any) bool {
		var slug string
		var version int
		if _, err := fmt.Sscanf(k.(string), "hot/%1s@%d", &slug, &version); err != nil {
			t.Fatalf("parse %v: %v", k, err)
		}
		v, _, err := s.Get(ctx, ref, "hot/"+slug, version) // an explicit version bypasses the cache
		if err != nil || v.Content != content {
			t.Errorf("hot/%s v%d read as %q, SQLite holds %q (%v)", slug, version, content, v.Content, err)
		}
		return true
	})
	for _, slug := range slugs {
		cached, _, cerr := s.Get(ctx, ref, slug, 0)
		file, ferr := latestFromFile(ctx, s, ref, slug)
		if !errors.Is(cerr, ferr) && (cerr != nil || ferr != nil) {
			t.Errorf("%s: cache %v, file %v", slug, cerr, ferr)
			continue
		}
		if cached.Version != file.Version || cached.Deleted != file.Deleted || cached.Content != file.Content {
			t.Errorf("%s: cache ends at v%d %q deleted %v, file at v%d %q deleted %v", slug,
				cached.Version, cached.Content, cached.Deleted, file.Version, file.Content, file.Deleted)
		}
	}
}

// latestFromFile reads a slug's latest version past the cache.
func latestFromFile(ctx context.Context, s *Store, ref memory.ProjectRef, slug string) (memory.Version, error) {
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return memory.Version{}, err
	}
	var latest int
	return scanLatest(ws.pool.reader.QueryRowContext(ctx, getSQL, ref.Project, slug, 0), &latest)
}

// whileWriting runs write in writers goroutines (each once, with its number)
// and read in readers goroutines over and over until every writer is done,
// and returns the errors: each goroutine stops at its first.
func whileWriting(writers, readers int, write, read func(i int) error) []error {
	var wg sync.WaitGroup
	errs := make(chan error, writers+readers)
	var writing atomic.Int64
	writing.Store(int64(writers))
	for w := range writers {
		wg.Go(func() {
			defer writing.Add(-1)
			if err := write(w); err != nil {
				errs <- err
			}
		})
	}
	for r := range readers {
		wg.Go(func() {
			for writing.Load() > 0 {
				if err := read(r); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}
