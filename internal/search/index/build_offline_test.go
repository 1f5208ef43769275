package index

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"

	"munin/internal/search/searchtest"
)

// TestOfflineBuildBoundsMemory: an offline build (BuildOffline: munin
// reindex) records no versions, and its index holds every entry once, each
// found by its own word, with the mark recorded (a reopen catches up
// instead of building again). The server's build, for comparison, ends
// with one segment and every slug's version. (How many segments an offline
// build ends with depends on how many batches scorch's persister wrote as
// one: TestOfflineMergesStopBelowTheCap.)
func TestOfflineBuildBoundsMemory(t *testing.T) {
	const n, batch = 300, 5
	src := searchtest.NewSource()
	for i := range n {
		src.Put(ref, fmt.Sprintf("e%03d", i), "T", "common "+uniqueWord(i))
	}
	defer keepOffline()()
	buildBatchesAtOnce.Store(2)
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("offline=%v", off), func(t *testing.T) {
			offline.Store(off)
			var c Counters
			cfg := testConfig(t, src, t.TempDir(), &c)
			cfg.BuildBatch = batch
			// Write each batch's segment at once, so merges make the index.
			cfg.PersistNap = time.Nanosecond
			p, idx, release := readyProject(t, cfg, n)
			if segs := segmentDocs(t, idx); !off && len(segs) != 1 {
				t.Fatalf("server build: segments %v, want one", segs)
			}
			if want := map[bool]int{false: n, true: 0}[off]; len(p.versions) != want {
				t.Fatalf("%d versions recorded, want %d", len(p.versions), want)
			}
			for i := range n {
				if res := searchContent(t, idx, uniqueWord(i), n+1); res.Total != 1 || res.Hits[0].ID != fmt.Sprintf("e%03d", i) {
					t.Fatalf("%s finds %d documents (%v), want e%03d alone", uniqueWord(i), res.Total, res.Hits, i)
				}
			}
			release()
			reopenFromDisk(t, p, cfg, &c, n)
		})
	}
}

// TestOfflineMergesStopBelowTheCap: the merges of an offline build, the
// merger's during it and the one that ends it, make no segment of
// offlineSegmentDocs documents or more, where the server's build ends with
// one. Each batch is written as its own segment here, so that only merges
// make larger ones.
func TestOfflineMergesStopBelowTheCap(t *testing.T) {
	const n, batch, capDocs = 150, 5, 50
	defer keepOffline()()
	offlineSegmentDocs = capDocs
	m, err := NewMapping()
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("offline=%v", off), func(t *testing.T) {
			offline.Store(off)
			idx, err := bleve.NewUsing(t.TempDir(), m, scorch.Name, scorch.Name, buildConfig(0))
			if err != nil {
				t.Fatal(err)
			}
			defer idx.Close()
			for i := 0; i < n; i += batch {
				b := idx.NewBatch()
				for j := i; j < i+batch; j++ {
					if err := b.Index(fmt.Sprintf("e%03d", j), map[string]any{"content": "common " + uniqueWord(j)}); err != nil {
						t.Fatal(err)
					}
				}
				if err := idx.Batch(b); err != nil {
					t.Fatal(err)
				}
				WaitPersisted(idx)
			}
			if err := mergeBuilt(context.Background(), idx); err != nil {
				t.Fatal(err)
			}
			segs := segmentDocs(t, idx)
			total, largest := 0, 0
			for _, d := range segs {
				total, largest = total+d, max(largest, d)
			}
			switch {
			case total != n:
				t.Fatalf("segments %v hold %d documents, want %d", segs, total, n)
			case !off && len(segs) != 1:
				t.Fatalf("server build: segments %v, want one", segs)
			case off && (len(segs) > n/(capDocs/2) || largest >= capDocs):
				t.Fatalf("offline build: segments %v, want at most %d, each below %d", segs, n/(capDocs/2), capDocs)
			}
			for i := range n {
				if res := searchContent(t, idx, uniqueWord(i), n+1); res.Total != 1 || res.Hits[0].ID != fmt.Sprintf("e%03d", i) {
					t.Fatalf("%s finds %d documents (%v), want e%03d alone", uniqueWord(i), res.Total, res.Hits, i)
				}
			}
		})
	}
}

// TestOfflineStepIsOneMerge: each step of mergeInSteps plans one merge of
// segments below the cap, whatever their number and sizes (scorch releases
// the sources of a plan only after all its merges).
func TestOfflineStepIsOneMerge(t *testing.T) {
	defer keepOffline()()
	offlineSegmentDocs = 1000
	for _, sizes := range [][]int64{
		{10, 10},
		{400, 300, 200, 100, 50, 20, 10, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5},
		{499, 499, 499, 499},
		{100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100},
	} {
		var segs []mergeplan.Segment
		for i, docs := range sizes {
			segs = append(segs, fakeSegment{id: uint64(i), docs: docs})
		}
		plan, err := mergeplan.Plan(segs, oneMergeOf(len(segs)))
		if err != nil {
			t.Fatal(err)
		}
		if plan == nil || len(plan.Tasks) != 1 {
			t.Fatalf("sizes %v: plan %+v, want one merge", sizes, plan)
		}
		var docs int64
		for _, s := range plan.Tasks[0].Segments {
			docs += s.LiveSize()
		}
		if n := len(plan.Tasks[0].Segments); n < 2 || docs >= offlineSegmentDocs {
			t.Fatalf("sizes %v: a merge of %d segments, %d documents; want 2 or more below %d", sizes, n, docs, offlineSegmentDocs)
		}
	}
}

// fakeSegment is a segment of docs live documents, as the merge planner sees it.
type fakeSegment struct {
	id   uint64
	docs int64
}

func (f fakeSegment) Id() uint64          { return f.id }
func (f fakeSegment) FullSize() int64     { return f.docs }
func (f fakeSegment) LiveSize() int64     { return f.docs }
func (f fakeSegment) HasVector() bool     { return false }
func (f fakeSegment) FileSize() int64     { return f.docs * 300 }
func (f fakeSegment) LiveFileSize() int64 { return f.docs * 300 }

// keepOffline returns a function that puts back the offline build's
// settings as they are now.
func keepOffline() func() {
	off, capDocs, atOnce := offline.Load(), offlineSegmentDocs, buildBatchesAtOnce.Load()
	return func() {
		offline.Store(off)
		offlineSegmentDocs = capDocs
		buildBatchesAtOnce.Store(atOnce)
	}
}

// segmentDocs is the number of documents in each segment of idx.
func segmentDocs(t *testing.T, idx bleve.Index) []int {
	t.Helper()
	r, err := scorchOf(t, idx).Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []int
	for _, s := range r.(*scorch.IndexSnapshot).Segments() {
		out = append(out, int(s.Count()))
	}
	return out
}
