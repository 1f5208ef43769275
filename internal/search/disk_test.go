package search

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"

	"munin/internal/memory"
	"munin/internal/search/index"
)

// restartable is a data directory's index root that registries open one
// after the other, as server processes do across restarts.
type restartable struct {
	t   *testing.T
	dir string
}

func newRestartable(t *testing.T) *restartable {
	return &restartable{t: t, dir: t.TempDir()}
}

// open starts a registry on the directory; the caller closes it (stop).
func (d *restartable) open(src Source) *Registry {
	r := NewRegistry(src, Options{Dir: d.dir, PersistNap: time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	d.t.Cleanup(func() { r.Close() })
	return r
}

// stop closes r as a server's shutdown does.
func (d *restartable) stop(r *Registry) {
	if err := r.Close(); err != nil {
		d.t.Fatal(err)
	}
}

// fillWords writes n entries, entry i holding word(i).
func fillWords(src *fakeSource, ref memory.ProjectRef, n int) {
	for i := range n {
		src.Put(ref, fmt.Sprintf("e%03d", i), "Entry", word(i)+" shared text")
	}
}

// want checks the hits of a one-word search.
func want(t *testing.T, r *Registry, ref memory.ProjectRef, text string, slugsWanted ...string) {
	t.Helper()
	got := slugs(find(t, r, ref, text))
	if fmt.Sprint(got) != fmt.Sprint(slugsWanted) && !(len(got) == 0 && len(slugsWanted) == 0) {
		t.Fatalf("search %q = %v, want %v", text, got, slugsWanted)
	}
}

func TestRestartOpensTheIndexOnDisk(t *testing.T) {
	d := newRestartable(t)
	src := newFakeSource()
	fillWords(src, projA, 50)
	r := d.open(src)
	want(t, r, projA, word(7), "e007")
	d.stop(r)

	r = d.open(src)
	want(t, r, projA, word(8), "e008")
	if st := r.Stats(); st.Builds != 0 || st.Opened != 1 {
		t.Fatalf("after a restart: %d builds, %d opened, want 0 and 1", st.Builds, st.Opened)
	}
}

// TestRestartCatchesUpWritesMadeWhileClosed: writes made while no server ran (an
// import) or not yet in the index at a crash are found after the restart,
// replaced and forgotten versions are not (invariant 3,
// docs/architecture.md#invariant-3-read-your-writes).
func TestRestartCatchesUpWritesMadeWhileClosed(t *testing.T) {
	d := newRestartable(t)
	src := newFakeSource()
	fillWords(src, projA, 20)
	r := d.open(src)
	want(t, r, projA, word(3), "e003")
	d.stop(r)

	src.Put(projA, "e003", "Entry", "replacedword")
	src.Forget(projA, "e004")
	src.Put(projA, "new", "New", "freshword")
	r = d.open(src)
	want(t, r, projA, "freshword", "new")
	want(t, r, projA, "replacedword", "e003")
	want(t, r, projA, word(3))
	want(t, r, projA, word(4))
	want(t, r, projA, word(5), "e005")
	if st := r.Stats(); st.Builds != 0 {
		t.Fatalf("catch-up rebuilt the index (%d builds)", st.Builds)
	}
}

// TestUntrustworthyIndexIsRebuilt: every index on disk that cannot be
// trusted is rebuilt from the source, never searched.
func TestUntrustworthyIndexIsRebuilt(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(t *testing.T, dir string)
	}{
		{"deleted", func(t *testing.T, dir string) { must(t, os.RemoveAll(dir)) }},
		{"other format", func(t *testing.T, dir string) { setInternal(t, dir, index.FormatKey, []byte("0")) }},
		{"no mark (build cut short)", func(t *testing.T, dir string) { setInternal(t, dir, index.MarkKey, nil) }},
		{"segment truncated", func(t *testing.T, dir string) {
			seg := segmentFile(t, dir)
			st, err := os.Stat(seg)
			must(t, err)
			must(t, os.Truncate(seg, st.Size()/2))
		}},
		{"segment with random bytes", func(t *testing.T, dir string) {
			seg := segmentFile(t, dir)
			b, err := os.ReadFile(seg)
			must(t, err)
			rng := rand.New(rand.NewPCG(5, 6))
			for i := len(b) / 4; i < len(b)/4+64 && i < len(b); i++ {
				b[i] ^= byte(1 + rng.IntN(255))
			}
			must(t, os.WriteFile(seg, b, 0o600))
		}},
		{"root file garbage", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "store", "root.bolt"), []byte("not a bolt file at all"), 0o600))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := newRestartable(t)
			src := newFakeSource()
			fillWords(src, projA, 30)
			r := d.open(src)
			want(t, r, projA, word(1), "e001")
			d.stop(r)

			c.spoil(t, IndexDir(d.dir, projA))
			src.Put(projA, "e002", "Entry", "afterword")
			r = d.open(src)
			want(t, r, projA, word(1), "e001")
			want(t, r, projA, "afterword", "e002")
			want(t, r, projA, word(2))
			if st := r.Stats(); st.Builds != 1 {
				t.Fatalf("%d builds, want the index rebuilt once", st.Builds)
			}
		})
	}
}

// TestRestoredOlderDatabaseRebuildsTheIndex: a backup put back under an
// index has another history, even once it has as many changes as the index
// recorded; the index notices by its mark and is rebuilt, so nothing of the
// discarded history is found.
func TestRestoredOlderDatabaseRebuildsTheIndex(t *testing.T) {
	d := newRestartable(t)
	newer := newFakeSource()
	fillWords(newer, projA, 10)
	newer.Put(projA, "gone", "Gone", "discardedword")
	r := d.open(newer)
	want(t, r, projA, "discardedword", "gone")
	d.stop(r)

	restored := newFakeSource()
	restored.SetHistory(1)
	fillWords(restored, projA, 10)
	for i := range 5 { // past the index's sequence
		restored.Put(projA, fmt.Sprintf("later%d", i), "Later", "laterword")
	}
	r = d.open(restored)
	want(t, r, projA, "discardedword")
	if got := find(t, r, projA, "laterword"); len(got) != 5 {
		t.Fatalf("laterword: %d hits, want 5", len(got))
	}
	if st := r.Stats(); st.Builds != 1 {
		t.Fatalf("%d builds, want the index rebuilt once", st.Builds)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// setInternal sets (or, for nil, deletes) an internal key of the closed
// index at dir.
func setInternal(t *testing.T, dir string, key, val []byte) {
	t.Helper()
	idx, err := bleve.OpenUsing(dir, nil)
	must(t, err)
	b := idx.NewBatch()
	if val == nil {
		b.DeleteInternal(key)
	} else {
		b.SetInternal(key, val)
	}
	must(t, idx.Batch(b))
	index.WaitPersisted(idx)
	must(t, idx.Close())
}

// segmentFile is the largest segment file of the index at dir.
func segmentFile(t *testing.T, dir string) string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "store", "*.zap"))
	must(t, err)
	if len(names) == 0 {
		t.Fatalf("no segment files in %s", dir)
	}
	best, size := "", int64(-1)
	for _, n := range names {
		if st, err := os.Stat(n); err == nil && st.Size() > size {
			best, size = n, st.Size()
		}
	}
	return best
}
