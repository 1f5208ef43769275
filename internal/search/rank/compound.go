package rank

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"munin/internal/search/text"
)

// Compounds. German writes "Fehlerbericht" where a note may say "Bericht
// über den Fehler" or "Fehler-Bericht", and the reverse. A query word is
// split into two known words (the head and a modifier, the modifier with or
// without a linking element: Kunde-n-wunsch, Sicherheit-s-konzept), and two
// neighbouring query words are joined into a known compound in either order
// ("Plan für das Release" → Releaseplan). "Known" means in the searched
// projects' dictionary (vocab.go). A hyphen needs nothing more: the
// tokenizer splits "Release-Plan" into two words, which a split of
// "Releaseplan" matches and a join of them finds "Releaseplan" from.
//
// A split matches an entry holding all its parts (anywhere, any field); a
// join matches an entry holding the compound. A split ranks below entries
// that match a query word as written (see tiers.go); a join counts as the
// two words it joins, below the entries holding two query words as written
// and above those holding one (join_rank.go).
//
// A modifier is often written in another form than in the compound: a verb
// stem (Lese-leistung: "Leistung beim Lesen", Speicher-fehler: "Fehler beim
// Speichern") or the stem of an -ung noun (Prüf-dauer: "Dauer der
// Prüfung"); and a part may be known only inside other compounds
// ("Projektleitung" for the modifier of "Projektplan"). compound_forms.go
// and compound_prefix.go add those.
const (
	// minPartRunes is the shortest part a compound is split into or joined
	// from: shorter parts ("ab", "um") would split almost any word.
	minPartRunes = 3
	// minCompoundRunes and maxCompoundRunes bound the words that are split
	// (and the joins that are tried). maxCompoundRunes also bounds the
	// dictionary lookups of one word: 34 split points.
	minCompoundRunes = 2 * minPartRunes
	maxCompoundRunes = 40
	// maxSplitsPerWord is how many different splits of one word are kept.
	maxSplitsPerWord = 2
	// maxJoinPairs is how many neighbouring word pairs are tried as a compound.
	maxJoinPairs = 8
	// maxCompoundAlts bounds the compound alternatives of one recall, each
	// one to three parts in two fields (altFields); a part searches up to
	// two terms (its stems), four with the stems of a modifier's -ung noun
	// (compound_forms.go), or up to maxPrefixTerms = 6 (the modifier of a
	// two-part split known only inside other compounds,
	// compound_prefix.go): at most 12 terms an alternative, 8 × 12 × 2 =
	// 192 term searches, in a tier of their own.
	maxCompoundAlts = 8
)

// linkingElements are the German linking elements (Fugenelemente), longest
// first; a modifier is tried as written and without one of them.
var linkingElements = []string{"es", "en", "er", "s", "n", "e"}

// alt is one alternative way a query word may be met: an entry matches when
// it holds every part, a part when it holds any of the part's terms.
type alt struct {
	parts [][]string
	// kind, word and known explain a hit the alternative found (Hit's
	// Explanation): kind is altSplit, altJoin or altTypo; word is the query
	// word (or the two joined words, as written) and known what it was met
	// as: the parts, the compound or the correction.
	kind  string
	word  string
	known []string
}

// The kinds of alternative.
const (
	altSplit = "split" // a query compound met by its parts
	altJoin  = "join"  // neighbouring query words met as one compound
	altTypo  = "typo"  // an unknown query word met by a known term one edit away
)

// key identifies an alt for deduplication.
func (a alt) key() string {
	var b strings.Builder
	for _, p := range a.parts {
		b.WriteString(strings.Join(p, " "))
		b.WriteByte('|')
	}
	return b.String()
}

// expansion is what a recall searches beyond its words as written.
type expansion struct {
	compounds []alt // tier 1: parts of a query compound, or a compound of query words
	typos     []alt // tier 2: a known term one edit away from an unknown query word
}

func (x expansion) empty() bool { return len(x.compounds) == 0 && len(x.typos) == 0 }

// compounds returns the splits of the query's words and the joins of
// neighbouring words that the vocabulary knows, at most maxCompoundAlts.
func compounds(words []text.Word, v *vocab) []alt {
	var out []alt
	seen := map[string]bool{}
	add := func(a alt) bool {
		if k := a.key(); !seen[k] {
			seen[k] = true
			out = append(out, a)
		}
		return len(out) < maxCompoundAlts
	}
	prefixWords := 0
	for _, w := range words {
		found := splits(w.Lower, v)
		if len(found) == 0 && prefixWords < maxPrefixWords && !v.hasAnyStem(w.Stems) {
			prefixWords++
			if parts, ok := prefixSplit(w.Lower, v); ok {
				found = append(found, parts)
			}
		}
		for _, parts := range found {
			a := alt{kind: altSplit, word: w.Lower}
			for _, p := range parts {
				a.known = append(a.known, p.name)
				a.parts = append(a.parts, p.terms)
			}
			if !add(a) {
				return out
			}
		}
	}
	for _, j := range joins(words, v) {
		if !add(j) {
			return out
		}
	}
	return out
}

// joins returns the joins of neighbouring query words (pairWords) that the
// vocabulary knows, in either order, at most maxCompoundAlts.
func joins(words []text.Word, v *vocab) []alt {
	var out []alt
	pairs := pairWords(words)
	for i := 0; i+1 < len(pairs) && i < maxJoinPairs && len(out) < maxCompoundAlts; i++ {
		a, b := pairs[i], pairs[i+1]
		for _, pair := range [][2]text.Word{{a, b}, {b, a}} {
			if c, ok := join(pair[0], pair[1], v); ok {
				out = append(out, alt{parts: [][]string{text.StemsOf(c)}, kind: altJoin, word: a.Lower + " " + b.Lower, known: []string{c}})
			}
		}
	}
	return out
}

// splits returns up to maxSplitsPerWord ways to cut word into a known
// modifier (with its linking element dropped where that makes it known) and
// a known head, each at least minPartRunes long. A word with no such split
// is tried as three parts, the head split once more
// (Datenbank-migration-s-skript): at most maxThreePartRunes letters, so the
// lookups stay bounded by the square of a short word.
func splits(word string, v *vocab) [][]part {
	n := utf8.RuneCountInString(word)
	if n < minCompoundRunes || n > maxCompoundRunes || !isWord(word) {
		return nil
	}
	out := splitTwo(word, v)
	if len(out) > 0 || n < 3*minPartRunes || n > maxThreePartRunes {
		return out
	}
	runes := []rune(word)
	for i := minPartRunes; i <= n-2*minPartRunes; i++ {
		mod, ok := knownModifier(string(runes[:i]), v)
		if !ok {
			continue
		}
		if rest := splitTwo(string(runes[i:]), v); len(rest) > 0 {
			return [][]part{append([]part{mod}, rest[0]...)}
		}
	}
	return nil
}

// maxThreePartRunes bounds the words split into three parts.
const maxThreePartRunes = 30

// part is one part of a split: the word the split met (known explains it)
// and the terms an entry holds one of to match it.
type part struct {
	name  string
	terms []string
}

// wordPart is a part met as a word: its stems.
func wordPart(w string) part { return part{name: w, terms: text.StemsOf(w)} }

// splitTwo is splits into two parts.
func splitTwo(word string, v *vocab) [][]part {
	runes := []rune(word)
	n := len(runes)
	var out [][]part
	for i := minPartRunes; i <= n-minPartRunes; i++ {
		head := string(runes[i:])
		if !v.hasWord(head) {
			continue
		}
		if mod, ok := knownModifier(string(runes[:i]), v); ok {
			out = append(out, []part{mod, wordPart(head)})
		}
		if len(out) == maxSplitsPerWord {
			break
		}
	}
	return out
}

// knownModifier returns the left part of a compound as the vocabulary knows
// it: as written or without its linking element, as a word or as the stem of
// an -ung noun (Prüf-dauer: "Prüfung"). Its terms are the word's stems and
// the known stems of the -ung noun, so "Prüfdauer" finds "Dauer der Prüfung"
// as well as "Dauer beim Prüfen".
func knownModifier(left string, v *vocab) (part, bool) {
	for _, mod := range modifiers(left) {
		noun := ungNoun(mod, v)
		if len(noun) == 0 && !v.hasWord(mod) {
			continue
		}
		p := wordPart(mod)
		for _, t := range noun {
			if !slices.Contains(p.terms, t) {
				p.terms = append(p.terms, t)
			}
		}
		return p, true
	}
	return part{}, false
}

// modifiers is a compound's left part as written and without each linking
// element it ends in, as long as minPartRunes remain.
func modifiers(left string) []string {
	out := []string{left}
	for _, l := range linkingElements {
		if rest, ok := strings.CutSuffix(left, l); ok && utf8.RuneCountInString(rest) >= minPartRunes {
			out = append(out, rest)
		}
	}
	return out
}

// join returns the compound of modifier and head (modifier first) that the
// vocabulary knows, if any. The modifier is tried as written, as its stems
// (Wünsche der Kunden → kunden+wünsche; Umgebung für Tests →
// test+umgebung) and in the forms a modifier takes (joinBases: Kosten der
// Speicherung → speicher+kosten, Fehler beim Speichern → speicher+fehler),
// each with every linking element: at most 5 bases × 7 lookups.
func join(mod, head text.Word, v *vocab) (string, bool) {
	if utf8.RuneCountInString(mod.Lower) < minPartRunes || utf8.RuneCountInString(head.Lower) < minPartRunes ||
		!isWord(mod.Lower) || !isWord(head.Lower) {
		return "", false
	}
	for _, base := range joinBases(mod) {
		for _, link := range append([]string{""}, linkingElements...) {
			c := base + link + head.Lower
			if utf8.RuneCountInString(c) > maxCompoundRunes {
				continue
			}
			if v.hasCompound(c) {
				return c, true
			}
		}
	}
	return "", false
}

// isWord tells whether s is letters only: numbers, versions and identifiers
// ("v2", "x86_64") are not compounds.
func isWord(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return true
}
