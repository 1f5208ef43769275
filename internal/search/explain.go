package search

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"munin/internal/search/rank"
	"munin/internal/search/text"
)

// Explanations. A hit found by the words of the query as written (or their
// forms) needs none; any other hit says in a few words how it matched
// (memory.Hit's Explanation):
//
//	matched 'Datenbank' for 'Datenbnak'          a typo's correction (tier 2)
//	parts of 'Fehlerbericht': Fehler, Bericht    a query compound's parts (tier 1)
//	'Releaseplan' for 'Plan Release'             query words joined (tier 1)
//	by meaning                                   only the meaning path found it (fuse.go)
//
// The entry's words are quoted as the entry writes them (the first word of
// its title or content that holds the term), the query's as the query
// writes them. When several alternatives matched, their explanations are
// joined by "; " while the whole stays within maxExplanationRunes (the first
// one always). A lower tier's hit whose alternative cannot be told (its
// words were rewritten since the search) says only how it was found:
// explainCompound or explainTypo. The same words are marked in the
// snippet, so the reader sees what stood in for the query's word.
const (
	explainMeaning      = "by meaning"
	explainCompound     = "by compound words"
	explainTypo         = "by a spelling correction"
	maxExplanationRunes = 60
)

// explainer explains the lower tiers' hits of one recall. The alternatives
// of a tier are shared by all its matches; each tier's terms get one Marker.
type explainer struct {
	query   string
	markers map[*rank.Alt]*text.Marker
}

func newExplainer(query string) *explainer {
	return &explainer{query: query, markers: map[*rank.Alt]*text.Marker{}}
}

// explain returns the explanation of a hit its tier found by alts (not
// empty), and the spans of content that hold the matched alternatives'
// terms, for the snippet's marks.
func (e *explainer) explain(alts []rank.Alt, title, content string) (string, []text.Span) {
	mk := e.markers[&alts[0]]
	if mk == nil {
		var terms []string
		for _, a := range alts {
			for _, p := range a.Parts {
				terms = append(terms, p...)
			}
		}
		mk = text.NewTermMarker(terms)
		e.markers[&alts[0]] = mk
	}
	// The entry's spelling of each term: the title's first, else the content's.
	inContent := mk.Find(content)
	written := map[string]string{}
	for _, src := range []struct {
		s     string
		found []text.Found
	}{{title, mk.Find(title)}, {content, inContent}} {
		for _, f := range src.found {
			if _, ok := written[f.Term]; !ok {
				written[f.Term] = src.s[f.Start:f.End]
			}
		}
	}
	var (
		parts   []string
		matched = map[string]bool{} // terms of the matched alternatives
		size    int
	)
	for _, a := range alts {
		words, ok := wordsOf(a, written)
		if !ok {
			continue
		}
		s := e.sentence(a, words)
		if slices.Contains(parts, s) {
			continue // two corrections met as the same word of the entry
		}
		n := utf8.RuneCountInString(s)
		if len(parts) > 0 {
			if size+len("; ")+n > maxExplanationRunes {
				continue
			}
			size += len("; ")
		}
		size += n
		parts = append(parts, s)
		for _, p := range a.Parts {
			for _, t := range p {
				matched[t] = true
			}
		}
	}
	if len(parts) == 0 {
		if alts[0].Kind == rank.AltTypo {
			return explainTypo, nil
		}
		return explainCompound, nil
	}
	var spans []text.Span
	for _, f := range inContent {
		if matched[f.Term] {
			spans = append(spans, f.Span)
		}
	}
	return strings.Join(parts, "; "), spans
}

// wordsOf returns the entry's words for each part of a, and whether the
// entry holds every part.
func wordsOf(a rank.Alt, written map[string]string) ([]string, bool) {
	words := make([]string, len(a.Parts))
	for i, p := range a.Parts {
		for _, t := range p {
			if w, ok := written[t]; ok {
				words[i] = w
				break
			}
		}
		if words[i] == "" {
			return nil, false
		}
	}
	return words, true
}

// sentence explains one alternative with the entry's words for its parts.
func (e *explainer) sentence(a rank.Alt, words []string) string {
	switch a.Kind {
	case rank.AltTypo:
		return "matched '" + words[0] + "' for '" + e.asWritten(a.Word) + "'"
	case rank.AltJoin:
		return "'" + words[0] + "' for '" + e.asWritten(a.Word) + "'"
	default:
		return "parts of '" + e.asWritten(a.Word) + "': " + strings.Join(words, ", ")
	}
}

// asWritten returns the query's words (lower case, separated by spaces) as
// the query writes them, each found again in the query text ignoring case.
func (e *explainer) asWritten(lower string) string {
	words := strings.Fields(lower)
	query := strings.FieldsFunc(e.query, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r)
	})
	for i, w := range words {
		for _, q := range query {
			if strings.EqualFold(q, w) {
				words[i] = q
				break
			}
		}
	}
	return strings.Join(words, " ")
}
