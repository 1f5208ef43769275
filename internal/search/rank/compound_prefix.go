package rank

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// Modifiers known only inside compounds. A team's notes may never use a
// modifier alone: "Projektplan" is asked for where the notes say "Plan"
// and "Projektleitung", and no split into known words exists. The
// dictionary still knows the modifier as the beginning of its compounds, so
// a query word no entry uses and no split explains is split once more where
// its head is a known word: the modifier is met by the dictionary's terms
// that begin with it and go on with a word (projekt → projektleitung) or an
// ending (mess → messung). Such a part matches an entry holding any of
// those terms; the head matches as in any split.
const (
	// minPrefixRunes is the shortest modifier met by its compounds: three
	// letters begin too many unrelated words ("pro", "ver").
	minPrefixRunes = 4
	// minPrefixRestRunes is how long the rest of a term after the modifier
	// must be to count as the head of a compound, unless it is an ending
	// (prefixEndings): "message" does not begin with the modifier "mess".
	minPrefixRestRunes = 4
	// maxPrefixTerms bounds the terms a modifier is met by: the first of
	// the dictionary's terms beginning with it, in term order.
	maxPrefixTerms = 6
	// maxPrefixScan is how many terms beginning with the modifier are read
	// per index, field and segment before the rest is checked.
	maxPrefixScan = 32
	// maxPrefixScansPerWord and maxPrefixWords bound the dictionary ranges
	// one recall reads: two per word, for four words.
	maxPrefixScansPerWord = 2
	maxPrefixWords        = 4
)

// prefixEndings are the endings that make a term beginning with a modifier
// another form of it: the linking elements (which are also the
// inflections) and the -ung noun.
var prefixEndings = append([]string{"ung", "ungen"}, linkingElements...)

// prefixSplit splits word into a known head and a modifier the dictionary
// knows only at the beginning of longer terms: the longest known head whose
// modifier begins such terms, trying at most maxPrefixScansPerWord heads.
// The modifier is looked for without its linking element (Wartungs-plan →
// wartung): the shortest form, whose terms include those of the others.
func prefixSplit(word string, v *vocab) ([]part, bool) {
	runes := []rune(word)
	n := len(runes)
	if n < minPrefixRunes+minPartRunes || n > maxCompoundRunes || !isWord(word) {
		return nil, false
	}
	scans := 0
	for i := minPrefixRunes; i <= n-minPartRunes && scans < maxPrefixScansPerWord; i++ {
		head := string(runes[i:])
		if !v.hasWord(head) {
			continue
		}
		mod := shortestModifier(string(runes[:i]))
		if utf8.RuneCountInString(mod) < minPrefixRunes {
			continue
		}
		scans++
		if terms := compoundTerms(mod, v); len(terms) > 0 {
			return []part{{name: mod, terms: terms}, wordPart(head)}, true
		}
	}
	return nil, false
}

// shortestModifier is the shortest of modifiers(left).
func shortestModifier(left string) string {
	short := left
	for _, m := range modifiers(left) {
		if len(m) < len(short) {
			short = m
		}
	}
	return short
}

// compoundTerms are the dictionary's terms that begin with mod and go on
// with a word of minPrefixRestRunes letters or more or with one of
// prefixEndings, at most maxPrefixTerms of them in term order.
func compoundTerms(mod string, v *vocab) []string {
	var out []string
	for _, t := range v.prefixed(mod, maxPrefixScan) {
		rest := strings.TrimPrefix(t, mod)
		if !isWord(rest) {
			continue
		}
		if utf8.RuneCountInString(rest) >= minPrefixRestRunes || slices.Contains(prefixEndings, rest) {
			out = append(out, t)
			if len(out) == maxPrefixTerms {
				break
			}
		}
	}
	return out
}
