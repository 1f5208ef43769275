package index

import (
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/util"

	"munin/internal/search/text"
)

// TestOpenedIndexSharesTheMapping: an index opened from disk uses the
// registry's mapping (the same object, not a copy parsed from the index) and
// analyzes with it: a query for a plural finds the singular through the
// English stemmer, which bleve's default mapping (what the stored stub
// would give) lacks. The index stores only the stub.
func TestOpenedIndexSharesTheMapping(t *testing.T) {
	src := newSource()
	dir := t.TempDir()
	var c Counters
	cfg := testConfig(t, src, dir, &c)
	p := New(cfg)
	if n := docs(t, p); n != 5 {
		t.Fatalf("%d docs, want 5", n)
	}
	p.Close()

	p = New(cfg)
	defer p.Close()
	if n := docs(t, p); n != 5 || c.Opened.Load() != 1 {
		t.Fatalf("reopened: %d docs, %d opened; want 5, 1", n, c.Opened.Load())
	}
	idx := p.Current()
	if idx.Mapping() != cfg.Mapping {
		t.Fatal("the opened index has a mapping of its own, not the shared one")
	}
	stored, err := idx.GetInternal(util.MappingInternalKey)
	if err != nil || string(stored) != string(stubMapping) {
		t.Fatalf("stored mapping %q, %v; want the stub %q", stored, err, stubMapping)
	}
	q := bleve.NewMatchQuery("alphas")
	q.SetField(text.FieldContent)
	res, err := idx.Search(bleve.NewSearchRequest(q))
	if err != nil || res.Total != 5 {
		t.Fatalf("match query for a plural: %v hits, %v; want 5", res, err)
	}
}
