package search

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"munin/internal/memory"
	"munin/internal/search/searchtest"
)

// typoNotes: the notes the typos must find, and neighbours they must not.
func typoRegistry(t *testing.T, opts Options) *Registry {
	t.Helper()
	src := newFakeSource()
	src.Put(projA, "db", "Datenbank", "Wir nutzen eine Datenbank für alle Projekte.")
	src.Put(projA, "recall", "Recall", "How recall ranks hits for agents.")
	src.Put(projA, "key", "Schlüssel", "Der Schlüssel liegt im Tresor.")
	src.Put(projA, "api", "Tor", "Das Tor ist offen, die Tür auch.")
	src.Put(projA, "other", "Wetter", "Es regnet den ganzen Tag.")
	return newTestRegistry(t, src, opts)
}

// TestTyposFindTheNote: a query word one edit away (a swap, a missing or an
// extra letter) finds the note; with typos off it finds nothing.
func TestTyposFindTheNote(t *testing.T) {
	r := typoRegistry(t, Options{})
	off := typoRegistry(t, Options{NoTypos: true})
	for q, want := range map[string]string{
		"Datenbnak":  "db",  // swapped neighbours
		"Datenbak":   "db",  // a letter missing
		"Datennbank": "db",  // a letter too many
		"Schlüsel":   "key", // a letter missing, umlaut
		"Schlusel":   "key", // and the umlaut written plain
		"recal":      "recall",
		"reacll":     "recall",
	} {
		if got := slugs(find(t, r, projA, q)); !slices.Equal(got, []string{want}) {
			t.Errorf("%q: %v, want [%s]", q, got, want)
		}
		if q == "recal" {
			continue // the English stem of recall is recal: no typo at all
		}
		if got := slugs(find(t, off, projA, q)); len(got) != 0 {
			t.Errorf("%q with typos off: %v, want nothing", q, got)
		}
	}
}

// TestShortWordsAreNotFuzzed: words of three letters or fewer are taken as
// written ("Tür" is not "Tor", "Tog" finds nothing); from four letters on
// they are corrected ("Wetr" finds "Wetter").
func TestShortWordsAreNotFuzzed(t *testing.T) {
	r := typoRegistry(t, Options{})
	if got := slugs(find(t, r, projA, "Wettr")); !slices.Equal(got, []string{"other"}) {
		t.Errorf("Wettr: %v, want [other] (five letters are corrected)", got)
	}
	for _, q := range []string{"Tog", "Tir", "Tüd", "ap"} {
		if got := slugs(find(t, r, projA, q)); len(got) != 0 {
			t.Errorf("%q: %v, want nothing (not fuzzed)", q, got)
		}
	}
}

// TestKnownWordsAreNotFuzzed: a word the notes use is not widened to its
// neighbours ("Daten" does not find "Datei").
func TestKnownWordsAreNotFuzzed(t *testing.T) {
	src := newFakeSource()
	src.Put(projA, "daten", "Daten", "Die Daten liegen im Archiv.")
	src.Put(projA, "datei", "Dateien", "Die Datei liegt im Archiv.")
	r := newTestRegistry(t, src, Options{})
	if got := slugs(find(t, r, projA, "Daten")); !slices.Equal(got, []string{"daten"}) {
		t.Fatalf("Daten: %v, want [daten]", got)
	}
	// An unknown word is corrected.
	if got := slugs(find(t, r, projA, "Archv")); len(got) != 2 {
		t.Fatalf("Archv: %v, want both entries", got)
	}
}

// TestTypoNeverOutranksExact: over several queries, random corpora and
// limits, every hit found only through a correction (or a compound part)
// ranks below every hit matching a query word as written, and scores fall
// along the list.
func TestTypoNeverOutranksExact(t *testing.T) {
	words := strings.Fields(`Datenbank Datenbanken Backup Sicherung Schlüssel Server Neustart
		Fehler Bericht Fehlerbericht Kunde Kunden Wunsch Plan Release Releaseplan Umgebung Test
		Replikation replication latency Latenz index Index cluster deploy`)
	rng := rand.New(rand.NewPCG(5, 6))
	src := newFakeSource()
	// Fewer entries than MaxLimit: the exact recall below lists all its hits.
	for i := range MaxLimit - 5 {
		var b strings.Builder
		for range 2 + rng.IntN(12) {
			b.WriteString(words[rng.IntN(len(words))] + " ")
		}
		src.Put(projA, fmt.Sprintf("n%03d", i), words[rng.IntN(len(words))], b.String())
	}
	r := newTestRegistry(t, src, Options{})
	exact := newTestRegistry(t, src, Options{NoCompounds: true, NoTypos: true})
	expanded := 0 // queries whose hits include an expanded one: the test is not vacuous
	for _, q := range []string{
		"Datenbnak", "Datenbnak Sicherung", "Schlüsel Server", "Fehlerbericht Backup",
		"Sicherunng Neustart", "replicatoin latency", "Kundenwunsch Datenbnak", "Releaseplan Latenz",
		"Servr Plan", "Bakup Umgebung für Tests",
	} {
		for _, limit := range []int{3, 10, MaxLimit} {
			sq := memory.SearchQuery{Text: q, Limit: limit}
			got, err := r.Search(testCtx(t), projA, sq)
			if err != nil {
				t.Fatal(err)
			}
			sq.Limit = MaxLimit
			ex, err := exact.Search(testCtx(t), projA, sq)
			if err != nil {
				t.Fatal(err)
			}
			isExact := map[string]bool{}
			for _, h := range ex {
				isExact[h.Slug] = true
			}
			seenExpanded := false
			for i, h := range got {
				if !isExact[h.Slug] {
					seenExpanded = true
				} else if seenExpanded {
					t.Fatalf("%q limit %d: exact hit %s at %d below an expanded hit: %v", q, limit, h.Slug, i, describe(got))
				}
				if i > 0 && h.Score > got[i-1].Score {
					t.Fatalf("%q limit %d: score rises at %d: %v", q, limit, i, describe(got))
				}
			}
			// The exact hits come first, all of them up to the limit.
			if n := min(limit, len(ex)); len(got) < n {
				t.Fatalf("%q limit %d: %d hits, but %d exact ones exist", q, limit, len(got), n)
			}
			if seenExpanded && limit == MaxLimit {
				expanded++
			}
		}
	}
	if expanded < 8 {
		t.Fatalf("only %d of 10 queries found anything beyond their words as written", expanded)
	}
}

// TestTyposAcrossProjects: corrections come from either project's
// vocabulary, and score as one index holding both projects would.
func TestTyposAcrossProjects(t *testing.T) {
	union := memory.ProjectRef{Workspace: "ws", Project: "union"}
	src := newFakeSource()
	put := func(ref memory.ProjectRef, slug, title, content string) {
		src.Put(ref, slug, title, content)
		src.Put(union, slug, title, content)
	}
	put(projA, "db", "Datenbank", "Wir nutzen eine Datenbank.")
	put(projB, "key", "Schlüssel", "Der Schlüssel liegt im Tresor.")
	for i := range 30 {
		put(projB, fmt.Sprintf("filler-%d", i), "Notiz", filler(i, 10)+" Datenbank")
	}
	r := newTestRegistry(t, src, Options{})
	for _, q := range []string{"Datenbnak", "Schlüsel", "Schlüsel Datenbnak", "Schlüssel Datenbnak"} {
		sq := memory.SearchQuery{Text: q, Limit: MaxLimit}
		got := searchAll(t, r, []memory.ProjectRef{projA, projB}, sq)
		want, err := r.Search(testCtx(t), union, sq)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || len(got) != len(want) {
			t.Fatalf("%q: %v over two projects, %v in one index", q, describe(got), describe(want))
		}
		for k, h := range got {
			if !near(h.Score, want[k].Score) {
				t.Errorf("%q: hit %d scores %v over two projects, %v in one index", q, k, h.Score, want[k].Score)
			}
		}
	}
}

// TestExpansionBadInput: long, stop-word-only, huge, emoji and mixed-script
// queries give a clear result or a clear error, never a panic, and stay
// within the lookup bound.
func TestExpansionBadInput(t *testing.T) {
	src := newFakeSource()
	fillSource(src, projA, 200)
	src.Put(projA, "mixed", "Datenbank база", "Datenbank データベース база данных")
	r := newTestRegistry(t, src, Options{})
	var fifty []string
	for i := range 50 {
		fifty = append(fifty, searchtest.BenchWords[i%len(searchtest.BenchWords)]+"x")
	}
	long := strings.Repeat("Fehlerbericht", 78) // 1014 bytes, one word
	for _, c := range []struct {
		text string
		code memory.Code // "" = a result
	}{
		{strings.Join(fifty, " "), memory.CodeInvalid}, // more than MaxQueryTerms words
		{strings.Join(fifty[:30], " "), ""},            // 30 unknown words: corrected up to the bounds
		{"der die das und oder the of", ""},
		{strings.Repeat("x", 10_000), memory.CodeTooLarge},
		{long, ""},
		{"🦀🦀 🚀 Datenbank🦀", ""},
		{"Datenbnak データベース база Datenbank-Plan", ""},
		{"Ⅻ ǅ ﬁle ß ẞ İstanbul", ""},
	} {
		hits, err := r.Search(testCtx(t), projA, memory.SearchQuery{Text: c.text})
		if memory.ErrorCode(err) != c.code {
			t.Errorf("%.40q: %v, want code %q", c.text, err, c.code)
		}
		for _, h := range hits {
			if !utf8.ValidString(h.Snippet) {
				t.Errorf("%.40q: invalid snippet %q", c.text, h.Snippet)
			}
		}
	}
}
