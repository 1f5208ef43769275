package index

import (
	"fmt"
	"slices"
	"testing"

	"github.com/blevesearch/bleve/v2/index/scorch"
	segment "github.com/blevesearch/scorch_segment_api/v2"

	"munin/internal/search/searchtest"
)

// TestSegmentsHoldOnlyWhatSearchReads: a segment of a built index holds the
// four searched fields (and bleve's _id and an empty _all), no doc values
// and, per document, no stored value but its id. Each of these would add
// bytes per term or per document to every index, and a small project's
// index is mostly fixed cost per term already (mapping.go).
func TestSegmentsHoldOnlyWhatSearchReads(t *testing.T) {
	src := searchtest.NewSource()
	for i := range 20 {
		src.Put(ref, fmt.Sprintf("notes/e%02d", i), "Title words", fmt.Sprintf("content word%d shared", i), "Tag", "other")
	}
	p := New(testConfig(t, src, t.TempDir(), nil))
	defer p.Close()
	if n := docs(t, p); n != 20 {
		t.Fatalf("%d docs, want 20", n)
	}
	r, err := scorchOf(t, p.Current()).Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	segs := r.(*scorch.IndexSnapshot).Segments()
	if len(segs) == 0 {
		t.Fatal("no segments")
	}
	want := []string{"_all", "_id", "content", "keys", "tags", "title"}
	for _, ss := range segs {
		seg := ss.Segment()
		fields := slices.Sorted(slices.Values(seg.Fields()))
		if !slices.Equal(fields, want) {
			t.Errorf("segment fields %v, want %v", fields, want)
		}
		if dv, ok := seg.(segment.DocValueVisitable); ok {
			if got, err := dv.VisitableDocValueFields(); err != nil || len(got) > 0 {
				t.Errorf("doc values of %v (%v), want none", got, err)
			}
		}
		if d, err := seg.Dictionary("_all"); err != nil || d.Cardinality() != 0 {
			t.Errorf("_all holds %d terms (%v), want none", d.Cardinality(), err)
		}
		stored := map[string]bool{}
		for num := range seg.Count() {
			err := seg.VisitStoredFields(num, func(field string, _ byte, _ []byte, _ []uint64) bool {
				stored[field] = true
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if delete(stored, "_id"); len(stored) > 0 {
			t.Errorf("documents store %v besides their id", stored)
		}
	}
}
