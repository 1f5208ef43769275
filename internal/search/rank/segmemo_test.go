package rank

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"

	"munin/internal/search/index"
)

// TestSegMemoBounded: a memo past segMemoMax terms, or all memos past
// segMemoBudget, starts over; what it holds is what was put last.
func TestSegMemoBounded(t *testing.T) {
	forgetMemos()
	var m segMemo
	for i := range segMemoMax/2 + 5 {
		m.putNear(0, fuzzyKey(fmt.Sprint("w", i), 1), []string{"x"})
	}
	if m.n > segMemoMax || m.n != 10 {
		t.Fatalf("after %d answers of 2 the memo holds %d (at most %d, started over once: 10)", segMemoMax/2+5, m.n, segMemoMax)
	}
	if near, ok := m.nearTerms(0, fuzzyKey(fmt.Sprint("w", segMemoMax/2+4), 1)); !ok || len(near) != 1 {
		t.Fatalf("the last answers are gone after starting over: %q %v", near, ok)
	}
	if _, ok := m.nearTerms(0, fuzzyKey("w1", 1)); ok {
		t.Fatal("an answer from before starting over is still there")
	}
	m.putNear(1, fuzzyKey("x", 3), []string{"a", "b"})
	if near, ok := m.nearTerms(1, fuzzyKey("x", 3)); !ok || len(near) != 2 {
		t.Fatalf("nearTerms = %q, %v", near, ok)
	}
	for _, other := range []memoKey{{1, fuzzyKey("x", 4)}, {0, fuzzyKey("x", 3)}} {
		if _, ok := m.nearTerms(other.field, other.term); ok {
			t.Fatalf("an answer of another limit or field: %+v", other)
		}
	}
	memos := make([]segMemo, segMemoBudget/segMemoMax+2)
	for i := range memos {
		for j := range segMemoMax {
			memos[i].putNear(0, fmt.Sprint(j), nil)
		}
	}
	segMemos.Lock()
	total := segMemos.total
	segMemos.Unlock()
	if total > segMemoBudget {
		t.Fatalf("all memos hold %d answers, the budget is %d", total, segMemoBudget)
	}
	forgetMemos()
}

// TestSegMemoConcurrent: recalls look the same terms up at once in fresh
// vocabularies over one index, memos filling and starting over meanwhile;
// each answers as a vocabulary without memos does (run with -race).
func TestSegMemoConcurrent(t *testing.T) {
	idx := indexOf(t, "Datenbank und Datum", "Die Bank der Kunden", "Schlüssel, Wunsch, Kundenwunsch", "replica replicat daten")
	terms := []string{"daten", "datum", "bank", "xyz", "schlüssel", "kund", "wunsch", "replica"}
	forgetMemos()
	want := map[string]bool{}
	wantNear := map[string][]string{}
	for _, term := range terms {
		v := newVocab(testCtx(t), []bleve.Index{idx})
		want[term] = v.hasTerm(term)
		v.fuzzy(term, maxTypoScan, func(s string) { wantNear[term] = append(wantNear[term], s) })
		v.close()
		forgetMemos()
	}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 200 {
				term := terms[(g+i)%len(terms)]
				v := newVocab(testCtx(t), []bleve.Index{idx})
				if got := v.hasTerm(term); got != want[term] {
					t.Errorf("hasTerm(%q) = %v, without memos %v", term, got, want[term])
				}
				var near []string
				v.fuzzy(term, maxTypoScan, func(s string) { near = append(near, s) })
				if fmt.Sprint(near) != fmt.Sprint(wantNear[term]) {
					t.Errorf("fuzzy(%q) = %q, without memos %q", term, near, wantNear[term])
				}
				v.close()
				if i%50 == 0 {
					forgetMemos()
				}
			}
		})
	}
	wg.Wait()
}

// TestSegMemoDroppedWithSegment: a segment the index no longer holds takes
// its memo with it when the garbage collector frees it.
func TestSegMemoDroppedWithSegment(t *testing.T) {
	forgetMemos()
	func() {
		m, err := index.NewMapping()
		if err != nil {
			t.Fatal(err)
		}
		idx, err := bleve.NewUsing(filepath.Join(t.TempDir(), "idx"), m, scorch.Name, scorch.Name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := idx.Index("e1", map[string]any{"content": "Datenbank Schlüssel"}); err != nil {
			t.Fatal(err)
		}
		v := newVocab(testCtx(t), []bleve.Index{idx})
		v.fuzzy("nirgends", maxTypoScan, func(string) {})
		v.close()
		if err := idx.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	segMemos.Lock()
	held := len(segMemos.m)
	segMemos.Unlock()
	if held == 0 {
		t.Fatal("the lookup kept no memo")
	}
	for range 100 {
		runtime.GC()
		segMemos.Lock()
		held = len(segMemos.m)
		segMemos.Unlock()
		if held == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%d memos of a closed index's segments are still held", held)
}
