package index

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/search/query"
	zap "github.com/blevesearch/zapx/v17"
)

// TestMergeWriteBufferIsSmall: merging two small segment files allocates
// less than zapx's default 1 MiB write buffer alone, and the merged index
// still finds every document of both.
func TestMergeWriteBufferIsSmall(t *testing.T) {
	const perBatch = 100
	idx, s := twoSegments(t, t.TempDir(), perBatch)
	defer idx.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := s.ForceMerge(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got >= 1<<20 {
		t.Errorf("merging two segments of %d documents allocated %d bytes; want less than zapx's 1 MiB default buffer", perBatch, got)
	}
	for _, word := range []string{"w0x7", "w1x99", "common"} {
		q := query.NewTermQuery(word)
		q.SetField("content")
		res, err := idx.Search(bleve.NewSearchRequest(q))
		if err != nil {
			t.Fatal(err)
		}
		want := uint64(1)
		if word == "common" {
			want = 2 * perBatch
		}
		if res.Total != want {
			t.Errorf("%q after the merge: %d documents, want %d", word, res.Total, want)
		}
	}
}

// twoSegments is a new index in dir with two segment files of perBatch
// documents each.
func twoSegments(tb testing.TB, dir string, perBatch int) (bleve.Index, *scorch.Scorch) {
	tb.Helper()
	m, err := NewMapping()
	if err != nil {
		tb.Fatal(err)
	}
	// Default scorch settings: Batch returns once the segment is a file.
	idx, err := bleve.NewUsing(dir, m, scorch.Name, scorch.Name, nil)
	if err != nil {
		tb.Fatal(err)
	}
	for b := range 2 {
		batch := idx.NewBatch()
		for i := range perBatch {
			// Unique words: a term dictionary to merge, not one word.
			content := fmt.Sprintf("common w%dx%d v%dy%d u%dz%d", b, i, b, i, b, i)
			if err := batch.Index(fmt.Sprintf("b%d-%d", b, i), map[string]any{"content": content}); err != nil {
				tb.Fatal(err)
			}
		}
		if err := idx.Batch(batch); err != nil {
			tb.Fatal(err)
		}
	}
	return idx, scorchOf(tb, idx)
}

// BenchmarkMergeTwoSegments merges two segment files of 100 documents with
// zapx's default write buffer and with mergeWriteBuffer; the indexes are
// made with the timer stopped.
func BenchmarkMergeTwoSegments(b *testing.B) {
	for _, size := range []int{1 << 20, mergeWriteBuffer} {
		b.Run(fmt.Sprintf("buffer=%dKiB", size>>10), func(b *testing.B) {
			defer func(old int) { zap.DefaultFileMergerBufferSize = old }(zap.DefaultFileMergerBufferSize)
			zap.DefaultFileMergerBufferSize = size
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				idx, s := twoSegments(b, b.TempDir(), 100)
				b.StartTimer()
				if err := s.ForceMerge(context.Background(), nil); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				idx.Close()
				b.StartTimer()
			}
		})
	}
}
