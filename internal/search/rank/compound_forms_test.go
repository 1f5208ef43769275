package rank

import (
	"fmt"
	"slices"
	"testing"

	"github.com/blevesearch/bleve/v2"

	"munin/internal/memory"
	"munin/internal/search/searchtest"
	"munin/internal/search/text"
)

// indexOf is an index of projA holding one entry per content (slug e0, e1
// …, title "Notiz").
func indexOf(t *testing.T, contents ...string) bleve.Index {
	t.Helper()
	return indexOfRef(t, projA, contents...)
}

func indexOfRef(t *testing.T, ref memory.ProjectRef, contents ...string) bleve.Index {
	t.Helper()
	src := searchtest.NewSource()
	for i, c := range contents {
		src.Put(ref, fmt.Sprintf("e%d", i), "Notiz", c)
	}
	idx, release, err := newProject(t, src, ref).Ready(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return idx
}

// vocabOf is the vocabulary of an index holding contents.
func vocabOf(t *testing.T, contents ...string) *vocab {
	t.Helper()
	v := newVocab(testCtx(t), []bleve.Index{indexOf(t, contents...)})
	t.Cleanup(v.close)
	return v
}

func word(lower string) text.Word { return text.Word{Lower: lower, Stems: text.StemsOf(lower)} }

// TestJoinBases: a join's modifier is tried without -ung/-ungen and, for a
// verb in -ern/-eln, without its -n; never shorter than minPartRunes.
func TestJoinBases(t *testing.T) {
	for _, c := range []struct {
		word string
		has  []string
		not  []string
	}{
		{"speicherung", []string{"speicherung", "speicher"}, nil},
		{"prüfungen", []string{"prüfungen", "prüf"}, nil},
		{"speichern", []string{"speichern", "speicher"}, nil},
		{"wechseln", []string{"wechseln", "wechsel"}, nil},
		{"lesen", []string{"lesen"}, []string{"lese"}},
		{"dung", []string{"dung"}, []string{"d", ""}}, // -ung leaves one letter
	} {
		got := joinBases(word(c.word))
		for _, h := range c.has {
			if !slices.Contains(got, h) {
				t.Errorf("joinBases(%q) = %q, want %q among them", c.word, got, h)
			}
		}
		for _, n := range c.not {
			if slices.Contains(got, n) {
				t.Errorf("joinBases(%q) = %q, want no %q", c.word, got, n)
			}
		}
		if len(got) > 5 {
			t.Errorf("joinBases(%q) = %q: more than five", c.word, got)
		}
	}
}

// TestUngNoun: a split's modifier is met as the stem of its known -ung
// noun; a modifier ending in a vowel or in -ung makes none.
func TestUngNoun(t *testing.T) {
	v := vocabOf(t, "Die Prüfung dauert. Die Zustellung klappt. Die Lesung fällt aus.")
	if got := ungNoun("prüf", v); !slices.Contains(got, "prüfung") {
		t.Errorf("ungNoun(prüf) = %q, want prüfung", got)
	}
	for _, mod := range []string{"lese", "zustellung", "zustellungs", "bank"} {
		if got := ungNoun(mod, v); got != nil {
			t.Errorf("ungNoun(%q) = %q, want none", mod, got)
		}
	}
	p, ok := knownModifier("zustell", v)
	if !ok || p.name != "zustell" || !slices.Contains(p.terms, "zustellung") {
		t.Errorf("knownModifier(zustell) = %+v, %v; want zustell, met by zustellung", p, ok)
	}
	if p, ok := knownModifier("bank", v); ok {
		t.Errorf("knownModifier(bank) = %+v, want unknown", p)
	}
}

// TestPairWords: a join pairs the words either side of a contraction of
// preposition and article.
func TestPairWords(t *testing.T) {
	var got []string
	for _, w := range pairWords(text.Analyze("Leistung beim Lesen fürs Hosting").Seq) {
		got = append(got, w.Lower)
	}
	if want := []string{"leistung", "lesen", "hosting"}; !slices.Equal(got, want) {
		t.Errorf("pairWords = %q, want %q", got, want)
	}
}

// TestJoinModifierForms: "Kosten der Speicherung" and "Fehler beim
// Speichern" join into the compounds the entries write.
func TestJoinModifierForms(t *testing.T) {
	v := vocabOf(t, "Die Speicherkosten sinken. Einen Speicherfehler wiederholt die App. Die Prüfdauer liegt bei 20 Minuten.")
	for _, c := range []struct{ query, want string }{
		{"Kosten der Speicherung", "speicherkosten"},
		{"Fehler beim Speichern", "speicherfehler"},
		{"Dauer der Prüfung", "prüfdauer"},
	} {
		js := joins(text.Analyze(c.query).Seq, v)
		if len(js) != 1 || js[0].kind != altJoin || !slices.Equal(js[0].known, []string{c.want}) {
			t.Errorf("joins(%q) = %+v, want %s", c.query, js, c.want)
		}
	}
	if js := joins(text.Analyze("Kosten der Lagerung").Seq, v); len(js) != 0 {
		t.Errorf("joins(Kosten der Lagerung) = %+v, want none", js)
	}
}

// TestPrefixSplit: a modifier no entry uses alone is met by the terms that
// begin with it and go on with a word or an ending, not with any letters.
func TestPrefixSplit(t *testing.T) {
	v := vocabOf(t, "Der Wartungsvertrag gilt. Der Kalender zeigt es. Die Messung lief. Die Message kam. Der Server steht.")
	parts, ok := prefixSplit("wartungskalender", v)
	if !ok || len(parts) != 2 || parts[0].name != "wartung" || !slices.Equal(parts[0].terms, []string{"wartungsvertrag"}) ||
		parts[1].name != "kalender" {
		t.Errorf("prefixSplit(wartungskalender) = %+v, %v; want wartung (wartungsvertrag) + kalender", parts, ok)
	}
	if got := compoundTerms("mess", v); !slices.Equal(got, []string{"messung"}) {
		t.Errorf("compoundTerms(mess) = %q, want messung only (not message)", got)
	}
	for _, w := range []string{"sonnenkalender", "kalender", "wartung", "abserver"} {
		if parts, ok := prefixSplit(w, v); ok {
			t.Errorf("prefixSplit(%q) = %+v, want none", w, parts)
		}
	}
	// The query word itself known: no prefix split is tried for it.
	if alts := compounds(text.Analyze("Kalender").Seq, v); len(alts) != 0 {
		t.Errorf("compounds(Kalender) = %+v, want none", alts)
	}
	alts := compounds(text.Analyze("Wartungskalender").Seq, v)
	if len(alts) != 1 || alts[0].kind != altSplit || !slices.Equal(alts[0].known, []string{"wartung", "kalender"}) {
		t.Errorf("compounds(Wartungskalender) = %+v, want the split wartung + kalender", alts)
	}
}

// TestPrefixEnd: the exclusive end of a prefix's range.
func TestPrefixEnd(t *testing.T) {
	for _, c := range []struct{ in, want []byte }{
		{[]byte("ab"), []byte("ac")},
		{[]byte{'a', 0xff}, []byte("b")},
		{[]byte{0xff, 0xff}, nil},
	} {
		if got := prefixEnd(c.in); !slices.Equal(got, c.want) {
			t.Errorf("prefixEnd(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
