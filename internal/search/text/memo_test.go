package text

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis"
)

// memoQueries are recall texts of both languages, typos, compounds, stop
// words and repeats.
var memoQueries = []string{
	"datenbank", "Datenbnak", "Bericht über den Fehler", "replication latency backup",
	"Datenbankschnittstelle", "the IT of DES", "Kundenwünsche kunden wunsch", "kafka kafka Kafka",
}

// TestAnalyzeQueryIsAnalyze: the memo hands out what Analyze makes, the
// first time, again, and after the memo filled and started over.
func TestAnalyzeQueryIsAnalyze(t *testing.T) {
	for round := range 3 {
		for _, q := range memoQueries {
			if got, want := AnalyzeQuery(q), Analyze(q); !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d: AnalyzeQuery(%q) = %+v, Analyze %+v", round, q, got, want)
			}
		}
		for i := range memoEntries + 1 {
			AnalyzeQuery(fmt.Sprintf("füllwort%d", i))
		}
	}
}

// TestStemsOfCopies: StemsOf is the filter's stems, and a caller changing
// its copy changes no later answer.
func TestStemsOfCopies(t *testing.T) {
	for _, w := range []string{"datenbanken", "indexing", "kundenwünsche", "x"} {
		want := stemsOf(w)
		got := StemsOf(w)
		if !slices.Equal(got, want) {
			t.Fatalf("StemsOf(%q) = %q, the filter %q", w, got, want)
		}
		got[0] = "changed"
		if again := StemsOf(w); !slices.Equal(again, want) {
			t.Fatalf("StemsOf(%q) after a caller changed its copy = %q, want %q", w, again, want)
		}
	}
}

// TestMemoizedMarkerMarksAsFresh: markers of one text share its analysis
// but not their piece memos; each marks what a marker made without the
// memo marks.
func TestMemoizedMarkerMarksAsFresh(t *testing.T) {
	contents := []string{
		"Die Datenbank und die Datenbanken; replication lag, latency of the backup.",
		"Ein Fehlerbericht: der Bericht über den Fehler im Kafka-Cluster (kafka).",
		"Kundenwünsche: jeder Kunde hat einen Wunsch. IT und DES.",
	}
	for _, q := range memoQueries {
		fresh := func() *Marker {
			return withPieces(newMarkerQuery(func(a analysis.Analyzer, terms map[string]string) {
				for _, tok := range a.Analyze([]byte(q)) {
					terms[string(tok.Term)] = string(tok.Term)
				}
			}))
		}
		for range 2 {
			m := NewMarker(q)
			for _, c := range contents {
				if got, want := m.Find(c), fresh().Find(c); !reflect.DeepEqual(got, want) {
					t.Fatalf("NewMarker(%q).Find(%q) = %v, without the memo %v", q, c, got, want)
				}
			}
		}
	}
}

// TestMemoConcurrent: recalls analyze at once, the memo filling and
// starting over meanwhile (run with -race).
func TestMemoConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 600 {
				q := memoQueries[(g+i)%len(memoQueries)]
				if i%3 == 0 {
					q = fmt.Sprintf("wort%d %d", g, i)
				}
				if got := AnalyzeQuery(q); got.Count() != Analyze(q).Count() {
					t.Errorf("AnalyzeQuery(%q) counts %d words", q, got.Count())
					return
				}
				NewMarker(q).Spans("Datenbank wort1 Fehler")
				StemsOf(fmt.Sprintf("wörter%d", i%50))
			}
		})
	}
	wg.Wait()
}

// TestMemoizedTermMarkerMarksAsFresh: NewTermMarker's markers share their
// terms' analysis and pieces too, and mark what a marker without the memo
// marks; lists whose terms differ only in how they are cut apart do not
// share one.
func TestMemoizedTermMarkerMarksAsFresh(t *testing.T) {
	content := "Die Datenbank und die Datenbanken; der Fehlerbericht, ein Bericht über den Fehler. Datenbank-Bericht"
	for _, terms := range [][]string{{"datenbank"}, {"bericht", "fehl"}, {"berichtfehl"}, {"bericht", "datenbank", "fehl"}, {"fehl", "bericht"}} {
		fresh := withPieces(newMarkerQuery(func(_ analysis.Analyzer, set map[string]string) {
			for _, term := range terms {
				set[term] = term
			}
		}))
		want := fresh.Find(content)
		for round := range 2 {
			if got := NewTermMarker(terms).Find(content); !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d: NewTermMarker(%q).Find = %v, without the memo %v", round, terms, got, want)
			}
		}
	}
}

// TestSharedPiecesBounded: markers of one text keep the marks of at most
// maxSharedPieces pieces, and mark as before past that; the marker memo
// starting over starts the count over.
func TestSharedPiecesBounded(t *testing.T) {
	var content strings.Builder
	for i := range maxSharedPieces + 100 {
		fmt.Fprintf(&content, "datenbank%d ", i)
	}
	m := NewMarker("datenbank")
	if got := len(m.Spans(content.String())); got != 0 {
		t.Fatalf("%d marks in words that only begin with the query word", got)
	}
	if n := sharedPieces.Load(); n > maxSharedPieces {
		t.Fatalf("%d pieces kept, at most %d", n, maxSharedPieces)
	}
	if got := NewMarker("datenbank").Find("Datenbank datenbank1 die Datenbanken"); len(got) != 2 {
		t.Fatalf("past the budget: %v, want the two forms of Datenbank", got)
	}
	for i := range memoEntries + 1 {
		NewMarker(fmt.Sprint("wort", i))
	}
	if n := sharedPieces.Load(); n > 1 {
		t.Fatalf("the marker memo started over, %d pieces still counted", n)
	}
}

// TestLongPiecesNotShared: a piece longer than maxSharedPieceBytes (an
// entry's run without spaces) is marked as any other but not kept, so the
// kept pieces stay small whatever the content.
func TestLongPiecesNotShared(t *testing.T) {
	long := "datenbank" + strings.Repeat("x", maxSharedPieceBytes)
	m := NewMarker("datenbankx" + strings.Repeat("x", 3))
	before := sharedPieces.Load()
	m.Spans(long + " " + long + "y")
	if n := sharedPieces.Load(); n > before {
		t.Fatalf("%d long pieces kept", n-before)
	}
	short := NewMarker("datenbank")
	if got := short.Find("die Datenbank"); len(got) != 1 {
		t.Fatalf("short piece: %v, want one mark", got)
	}
	if n := sharedPieces.Load(); n <= before {
		t.Fatalf("a short piece was not kept (%d before, %d after)", before, n)
	}
}
