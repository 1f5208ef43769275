package rank

import (
	"cmp"
	"slices"
	"unicode/utf8"

	"munin/internal/search/text"
)

// Typos. A query word none of whose stems any searched entry uses is looked
// up once more with one edit: a letter added, dropped, changed, or two
// neighbours swapped (Damerau: "Datenbnak" → Datenbank, "Schlüsel" →
// Schlüssel). Only unknown words are corrected, so a word spelled right is
// never widened to its neighbours, and recall of known words costs one
// dictionary lookup per word. Corrections match in their own tier, below
// every entry matching a query word as written or as a compound (see
// tiers.go). Words with digits or other non-letters are
// identifiers, versions or ticket numbers (v1, x86, unique0word): one edit
// away is a different thing, never a typo, so they are not corrected.
const (
	// minTypoRunes: words of three letters or fewer are not corrected; one
	// edit away from "api" or "tag" lies half the dictionary.
	minTypoRunes = 4
	// maxTypoRunes bounds the words corrected: a longer token is an
	// identifier or a hash, and the edit automaton grows with the word.
	maxTypoRunes = 40
	// maxTypoWords is how many unknown words of one recall are corrected.
	maxTypoWords = 4
	// maxTypoScan is how many dictionary terms one edit away are read per
	// stem, index and field; maxTyposPerWord of them, the most used, are
	// searched.
	maxTypoScan     = 32
	maxTyposPerWord = 3
)

// skipListedAbsent turns off, in a test, typos' use of what fuzzy listed.
var skipListedAbsent = true

// typos returns the corrections of the query's unknown words: for each, the
// known terms one edit away from its stems, the most used first.
func typos(words []text.Word, v *vocab) []alt {
	var out []alt
	fixed := 0
	for _, w := range words {
		if fixed == maxTypoWords {
			break
		}
		n := utf8.RuneCountInString(w.Lower)
		if n < minTypoRunes || n > maxTypoRunes || !isWord(w.Lower) || v.hasAnyStem(w.Stems) {
			continue
		}
		var cands []string
		for _, s := range w.Stems {
			if utf8.RuneCountInString(s) < minTypoRunes-1 {
				continue
			}
			var found []string
			all := v.fuzzy(s, maxTypoScan, func(t string) { found = append(found, t) })
			for _, t := range transpositions(s) {
				// A transposition is one edit: when fuzzy listed every
				// term near s, one it did not list is in no dictionary
				// (TestTyposKnowAbsentTranspositions).
				if all && skipListedAbsent && !slices.Contains(found, t) {
					v.absent(t)
					continue
				}
				if v.hasTerm(t) {
					found = append(found, t)
				}
			}
			for _, t := range found {
				if t != s && isWord(t) && !slices.Contains(cands, t) {
					cands = append(cands, t)
				}
			}
		}
		if len(cands) == 0 {
			continue
		}
		fixed++
		// The same order whichever indexes hold the terms, so a recall over
		// several projects corrects as one index holding them all would.
		slices.Sort(cands)
		cands = cands[:min(len(cands), maxTypoScan)]
		if len(cands) > maxTyposPerWord {
			df := make(map[string]uint64, len(cands))
			for _, c := range cands {
				df[c] = v.df(c)
			}
			slices.SortStableFunc(cands, func(a, b string) int { return cmp.Compare(df[b], df[a]) })
			cands = cands[:maxTyposPerWord]
		}
		for _, c := range cands {
			out = append(out, alt{parts: [][]string{{c}}, kind: altTypo, word: w.Lower, known: []string{c}})
		}
	}
	return out
}

// transpositions are s with two different neighbouring letters swapped.
func transpositions(s string) []string {
	r := []rune(s)
	var out []string
	for i := 0; i+1 < len(r); i++ {
		if r[i] == r[i+1] {
			continue
		}
		r[i], r[i+1] = r[i+1], r[i]
		out = append(out, string(r))
		r[i], r[i+1] = r[i+1], r[i]
	}
	return out
}
