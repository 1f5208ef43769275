package rank

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"

	"munin/internal/search/index"
)

// TestVocabMatchesBleveDictionaries: the vocabulary reads the segments'
// dictionaries itself (vocab.go); what it answers must be what
// bleve's merged dictionaries answer, over several segments and with
// deleted documents: the same known terms, and per field the same first
// terms within one edit.
func TestVocabMatchesBleveDictionaries(t *testing.T) {
	m, err := index.NewMapping()
	if err != nil {
		t.Fatal(err)
	}
	// No segment is small enough for the merger to merge, and each batch
	// is written before the next (the persister merges the ones it has not
	// written), so each batch stays a segment of its own.
	idx, err := bleve.NewUsing(filepath.Join(t.TempDir(), "idx"), m, scorch.Name, scorch.Name, map[string]any{
		"scorchMergePlanOptions": map[string]any{"MaxSegmentSize": 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = idx.Close() })
	rng := rand.New(rand.NewPCG(7, 8))
	stems := []string{"daten", "datum", "bank", "banken", "schlüssel", "schlüsel", "replica", "replicat",
		"latenz", "latent", "kunde", "kunden", "wunsch", "wünsche", "deploy", "deplo", "runner", "runne"}
	words := func(n int) string {
		out := ""
		for range n {
			out += fmt.Sprintf("%s%d ", stems[rng.IntN(len(stems))], rng.IntN(40))
		}
		return out
	}
	// Four batches: four segments; then deletions, whose terms stay in the
	// segments.
	for b := range 4 {
		batch := idx.NewBatch()
		for i := range 50 {
			doc := map[string]any{"title": words(3), "content": words(20)}
			if err := batch.Index(fmt.Sprintf("e-%d-%d", b, i), doc); err != nil {
				t.Fatal(err)
			}
		}
		if err := idx.Batch(batch); err != nil {
			t.Fatal(err)
		}
		index.WaitPersisted(idx)
	}
	for i := range 30 {
		if err := idx.Delete(fmt.Sprintf("e-1-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	snap := snapshotOf(t, idx)
	if n := len(snap.Segments()); n < 2 {
		t.Fatalf("%d segments: the test needs several", n)
	}
	v := newVocab(testCtx(t), []bleve.Index{idx})
	defer v.close()
	var probes []string
	for _, s := range stems {
		for n := range 45 {
			probes = append(probes, fmt.Sprintf("%s%d", s, n))
		}
	}
	knownOpened, knownAll := 0, 0
	for _, term := range probes {
		want := false
		for _, f := range vocabFields {
			d, err := snap.FieldDictContains(f)
			if err != nil {
				t.Fatal(err)
			}
			ok, err := d.Contains([]byte(term))
			if err != nil {
				t.Fatal(err)
			}
			want = want || ok
		}
		if got := v.hasTerm(term); got != want {
			t.Errorf("hasTerm(%q) = %v, bleve says %v", term, got, want)
		}
		// A vocabulary of its own opens the dictionaries as it needs
		// them (vocab.go's fieldDict): the same answer, every dictionary
		// looked at for an unknown term.
		fresh := newVocab(testCtx(t), []bleve.Index{idx})
		if got := fresh.hasTerm(term); got != want {
			t.Errorf("hasTerm(%q) of a fresh vocabulary = %v, bleve says %v", term, got, want)
		}
		opened, all := openedDicts(fresh)
		for _, ms := range fresh.memos {
			for _, m := range ms {
				if m != nil {
					t.Fatalf("hasTerm(%q) looked up a segment's fuzzy memo: only fuzzy needs them", term)
				}
			}
		}
		if !want && opened != all {
			t.Errorf("hasTerm(%q), unknown, looked at %d of %d dictionaries", term, opened, all)
		}
		if want {
			knownOpened, knownAll = knownOpened+opened, knownAll+all
		}
		fresh.close()
	}
	if knownOpened*2 > knownAll {
		t.Errorf("known terms opened %d of %d dictionaries: they are not opened as needed", knownOpened, knownAll)
	}
	for _, term := range []string{"daten7", "bank12", "schlüssel3", "kunden30", "wunsch1", "runner9", "xyz"} {
		for _, limit := range []int{1, 3, maxTypoScan} {
			var want []string
			for _, f := range vocabFields {
				fd, err := snap.FieldDictFuzzy(f, term, 1, "")
				if err != nil {
					t.Fatal(err)
				}
				for range limit {
					e, err := fd.Next()
					if err != nil || e == nil {
						break
					}
					want = append(want, e.Term)
				}
				_ = fd.Close()
			}
			var got, fresh []string
			v.fuzzy(term, limit, func(s string) { got = append(got, s) })
			if !slices.Equal(got, want) {
				t.Errorf("fuzzy(%q, %d) = %q, bleve says %q", term, limit, got, want)
			}
			forgetMemos()
			for round := range 2 {
				// Round 1 answers from the memos round 0 filled.
				fresh = fresh[:0]
				fv := newVocab(testCtx(t), []bleve.Index{idx})
				fv.fuzzy(term, limit, func(s string) { fresh = append(fresh, s) })
				opened, _ := openedDicts(fv)
				fv.close()
				if !slices.Equal(fresh, want) {
					t.Errorf("fuzzy(%q, %d) of a fresh vocabulary, round %d = %q, bleve says %q", term, limit, round, fresh, want)
				}
				if round == 1 && opened != 0 {
					t.Errorf("fuzzy(%q, %d) again opened %d dictionaries: the segments' memos did not answer", term, limit, opened)
				}
			}
		}
	}
	// prefixed: the first terms after the prefix itself, in term order,
	// of both fields together.
	for _, prefix := range []string{"daten", "kunde", "wunsch1", "schlüs", "bank3", "xyz"} {
		var all []string
		for _, f := range vocabFields {
			fd, err := snap.FieldDictPrefix(f, []byte(prefix))
			if err != nil {
				t.Fatal(err)
			}
			for {
				e, err := fd.Next()
				if err != nil || e == nil {
					break
				}
				if e.Term != prefix {
					all = append(all, e.Term)
				}
			}
			_ = fd.Close()
		}
		slices.Sort(all)
		all = slices.Compact(all)
		if prefix == "daten" && len(all) <= maxPrefixScan {
			t.Fatalf("%d terms begin with daten: the test needs more than %d", len(all), maxPrefixScan)
		}
		for _, limit := range []int{1, 5, maxPrefixScan} {
			want := all[:min(len(all), limit)]
			v := newVocab(testCtx(t), []bleve.Index{idx})
			if got := v.prefixed(prefix, limit); !slices.Equal(got, want) {
				t.Errorf("prefixed(%q, %d) = %q, bleve says %q", prefix, limit, got, want)
			}
			v.close()
		}
	}
}

// openedDicts counts the dictionaries v opened and all it could open.
func openedDicts(v *vocab) (opened, all int) {
	for _, fds := range v.dicts {
		for _, fd := range fds {
			for _, d := range fd {
				all++
				if d != nil {
					opened++
				}
			}
		}
	}
	return opened, all
}

// forgetMemos drops every segment's memo (segmemo.go).
func forgetMemos() {
	segMemos.Lock()
	defer segMemos.Unlock()
	segMemos.m, segMemos.total = map[segKey]*segMemo{}, 0
}
