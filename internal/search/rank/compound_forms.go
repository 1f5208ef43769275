package rank

import (
	"slices"
	"strings"
	"unicode/utf8"

	"munin/internal/search/text"
)

// Modifier forms. German builds a compound's modifier from a verb's stem
// (lesen → Lese-leistung, speichern → Speicher-fehler) and from a noun in
// -ung without it (Prüfung → Prüf-dauer, Messung → Mess-werte), while a
// phrase says "Leistung beim Lesen" or "Dauer der Prüfung". The stemmers
// meet some of these (lesen and lese share "les"; Speicherung stems to
// "speicher") but not all: "prüfung" keeps its -ung, "speichern" stems to
// "speich". So a join also tries the modifier without -ung and a verb in
// -ern/-eln without its -n, and a split also meets a modifier as the stem of
// a known -ung noun.

// ungEndings are the -ung noun endings a join drops from its modifier.
var ungEndings = []string{"ungen", "ung"}

// joinBases are the forms a query word may take as the modifier of a
// compound: as written, its stems, without -ung/-ungen (speicherung →
// speicher, prüfungen → prüf) and, for a verb in -ern or -eln, without the
// -n (speichern → speicher, wechseln → wechsel); each at least
// minPartRunes long. At most five: the word, two stems, two forms.
func joinBases(w text.Word) []string {
	bases := []string{w.Lower}
	add := func(b string) {
		if !slices.Contains(bases, b) && utf8.RuneCountInString(b) >= minPartRunes {
			bases = append(bases, b)
		}
	}
	for _, s := range w.Stems {
		add(s)
	}
	for _, e := range ungEndings {
		if rest, ok := strings.CutSuffix(w.Lower, e); ok {
			add(rest)
			break
		}
	}
	if strings.HasSuffix(w.Lower, "ern") || strings.HasSuffix(w.Lower, "eln") {
		add(strings.TrimSuffix(w.Lower, "n"))
	}
	return bases
}

// ungNoun returns the known stems of mod's -ung noun (prüf → prüfung): a
// split's modifier in that form. Only a modifier ending in a consonant
// makes one (the stem of a verb), and one in -ung is one already: at most
// two lookups.
func ungNoun(mod string, v *vocab) []string {
	last, _ := utf8.DecodeLastRuneInString(mod)
	if strings.ContainsRune("aeiouäöüy", last) || strings.HasSuffix(mod, "ung") || strings.HasSuffix(mod, "ungs") {
		return nil
	}
	var out []string
	for _, s := range text.StemsOf(mod + "ung") {
		if v.hasTerm(s) {
			out = append(out, s)
		}
	}
	return out
}

// pairContractions are a preposition and an article in one word that
// neither stop list drops ("Leistung beim Lesen", "Geld fürs Hosting"): a
// join pairs the words either side of one, as it pairs the words either side
// of "bei dem".
var pairContractions = map[string]bool{
	"beim": true, "fürs": true, "ans": true, "aufs": true, "ums": true, "übers": true, "durchs": true,
	"vors": true, "hinters": true, "unters": true, "vorm": true, "überm": true, "unterm": true, "hinterm": true,
}

// pairWords are the words a join pairs neighbours of: the query's words
// without pairContractions.
func pairWords(words []text.Word) []text.Word {
	out := make([]text.Word, 0, len(words))
	for _, w := range words {
		if !pairContractions[w.Lower] {
			out = append(out, w)
		}
	}
	return out
}
