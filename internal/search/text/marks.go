package text

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	unitok "github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
)

// Match marks. A hit's snippet marks the words of its content that match the
// recall's terms. The index keeps no term vectors (they cost more memory than
// the text), so the marks are found by analyzing the content again with the
// same analyzers as the query, which is what term locations recorded.

// snippetAnalyzers are the analyzers of the content fields, in the order of
// a marker's terms.
var snippetAnalyzers = []string{AnalyzerEN}

// Marker finds a recall's query terms in the contents of its hits, for the
// snippets' marks: what term locations held for the matched terms. It is
// made once per recall, because analyzing words is the dear part and the
// hits of one recall share most of their words.
type Marker struct {
	*markerQuery
	pieces []map[string][]Found // per analyzer: the marks in a piece of content, relative to it
}

// markerQuery is what a Marker knows of its query, read-only once made:
// NewMarker's are shared by the recalls of one query text (memo.go).
type markerQuery struct {
	analyzers []analysis.Analyzer
	terms     []map[string]string // per analyzer: the query's terms (each its own value, so a match names it without allocating)
	prefixes  []*prefixSet        // per analyzer: their first bytes
	shared    *pieceMemo          // the marks of pieces any marker of the same query found (memo.go)
}

// Found is a matched word's byte range and the term it matched.
type Found struct {
	Span
	Term string
}

// NewMarker analyzes the query text as the content fields' match queries do
// (once per text while the memo keeps it).
func NewMarker(text string) *Marker {
	return withPieces(markerTerms.get(text, func(text string) *markerQuery {
		q := newMarkerQuery(func(a analysis.Analyzer, terms map[string]string) {
			for _, tok := range a.Analyze([]byte(text)) {
				terms[string(tok.Term)] = string(tok.Term)
			}
		})
		q.shared = newPieceMemo(len(q.analyzers))
		return q
	}))
}

// NewTermMarker finds terms that are already analyzed (the stems a compound
// part or a typo correction searches, internal/search/rank) rather than the
// words of a query text.
// Like NewMarker's, its analysis and the marks of the pieces it analyzed
// are shared with the markers of the same terms while the memo keeps them.
func NewTermMarker(terms []string) *Marker {
	var key strings.Builder // each term with its length: no two lists share a key
	for _, t := range terms {
		key.WriteString(strconv.Itoa(len(t)))
		key.WriteByte(':')
		key.WriteString(t)
	}
	return withPieces(termMarkers.get(key.String(), func(string) *markerQuery {
		q := newMarkerQuery(func(_ analysis.Analyzer, set map[string]string) {
			for _, t := range terms {
				set[t] = t
			}
		})
		q.shared = newPieceMemo(len(q.analyzers))
		return q
	}))
}

// newMarkerQuery makes a markerQuery whose terms per analyzer fill puts in.
func newMarkerQuery(fill func(a analysis.Analyzer, terms map[string]string)) *markerQuery {
	q := &markerQuery{}
	for _, name := range snippetAnalyzers {
		a := Analyzer(name)
		terms := map[string]string{}
		fill(a, terms)
		q.analyzers = append(q.analyzers, a)
		q.terms = append(q.terms, terms)
		q.prefixes = append(q.prefixes, newPrefixSet(terms))
	}
	return q
}

// withPieces is a Marker of q with empty piece memos of its own.
func withPieces(q *markerQuery) *Marker {
	m := &Marker{markerQuery: q}
	for range q.analyzers {
		m.pieces = append(m.pieces, map[string][]Found{})
	}
	return m
}

// Spans returns the byte ranges of content whose analyzed term is a query
// term of the same analyzer. Segmenting and stemming every word of a 64 KB
// entry takes milliseconds, so only words that can stem to a query term are
// analyzed: a stem keeps its word's first two letters, lower-cased and, for
// the German stem, with umlauts normalized (both stemmers change endings
// only). The content is first cut at ASCII whitespace, where every word ends
// (the tokenizer never joins across it), and only pieces where a word may
// start with a query term's prefix are segmented and analyzed, each distinct
// piece once per recall (and, for NewMarker's, once while its query text's
// memo keeps it: hits of the same entries come back).
func (m *Marker) Spans(content string) []Span {
	var spans []Span
	m.scan(content, func(at int, f Found) { spans = append(spans, Span{at + f.Start, at + f.End}) })
	return spans
}

// Find is Spans with the term each span matched.
func (m *Marker) Find(content string) []Found {
	var found []Found
	m.scan(content, func(at int, f Found) {
		found = append(found, Found{Span{at + f.Start, at + f.End}, f.Term})
	})
	return found
}

// scan calls match for every mark in content: the piece's offset and the
// mark relative to it.
func (m *Marker) scan(content string, match func(at int, f Found)) {
	for i, terms := range m.terms {
		if len(terms) == 0 {
			continue
		}
		for start := 0; start < len(content); {
			if asciiSpace[content[start]] {
				start++
				continue
			}
			end := start + 1
			for end < len(content) && !asciiSpace[content[end]] {
				end++
			}
			piece := content[start:end]
			if !pieceMayMatch(piece, m.prefixes[i]) {
				start = end
				continue
			}
			rel, ok := m.pieces[i][piece]
			if !ok {
				if rel, ok = m.shared.get(i, piece); !ok {
					rel = m.pieceSpans(i, piece)
					m.shared.put(i, piece, rel)
				}
				m.pieces[i][piece] = rel
			}
			for _, f := range rel {
				match(start, f)
			}
			start = end
		}
	}
}

// pieceSpans is Spans for one piece of content without whitespace, with
// analyzer i.
func (m *Marker) pieceSpans(i int, piece string) []Found {
	var rel []Found
	for _, word := range wordTokenizer.Tokenize([]byte(piece)) {
		if !mayMatch(word.Term, m.prefixes[i]) {
			continue
		}
		for _, tok := range m.analyzers[i].Analyze(word.Term) {
			if t, ok := m.terms[i][string(tok.Term)]; ok {
				rel = append(rel, Found{Span{word.Start + tok.Start, word.Start + tok.End}, t})
			}
		}
	}
	return rel
}

// asciiSpace marks the ASCII whitespace bytes. Each is a word boundary on
// both sides for the tokenizer (Unicode word segmentation, UAX #29), and no
// byte of a multi-byte UTF-8 rune is one.
var asciiSpace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true, '\v': true, '\f': true}

// pieceMayMatch tells whether a word the tokenizer finds in piece (text
// without ASCII whitespace) may start with one of prefixes. A word starts
// where a run of Latin letters, digits and underscores starts, or anywhere
// else: inside such a run Unicode word segmentation never breaks, so every
// other position is tried (punctuation, other scripts), which may let a
// piece through needlessly but never misses a word.
func pieceMayMatch(piece string, prefixes *prefixSet) bool {
	inRun := false
	for i := 0; i < len(piece); {
		// Most content is ASCII: a word starting with an ASCII byte can
		// only stem to a query term when that byte, lower-cased, begins
		// one (normalization changes only non-ASCII letters and drops an
		// e after a, o or u, never a first letter).
		if c := piece[i]; c < utf8.RuneSelf {
			run := asciiWord[c]
			if !(inRun && run) && prefixes.first[asciiLower(c)] && mayMatchString(piece[i:], prefixes) {
				return true
			}
			inRun = run
			i++
			continue
		}
		c, size := utf8.DecodeRuneInString(piece[i:])
		run := isLatinWordRune(c)
		if !(inRun && run) && mayMatchString(piece[i:], prefixes) {
			return true
		}
		inRun = run
		i += size
	}
	return false
}

// asciiWord marks the ASCII bytes isLatinWordRune accepts.
var asciiWord = func() (w [utf8.RuneSelf]bool) {
	for c := range w {
		w[c] = isLatinWordRune(rune(c))
	}
	return w
}()

// asciiLower lower-cases an ASCII letter and leaves other bytes alone.
func asciiLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// isLatinWordRune tells whether c is a letter or digit below U+0250 (Latin
// scripts) or the underscore: runs of these are never split into words.
func isLatinWordRune(c rune) bool {
	if c < utf8.RuneSelf {
		return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
	}
	return c < 0x250 && unicode.IsLetter(c)
}

// wordTokenizer splits content into words as the analyzers do.
var wordTokenizer = unitok.NewUnicodeTokenizer()

// mayMatch tells whether word, lower-cased and as the German analysis
// normalizes it, starts with one of the query terms' prefixes.
func mayMatch(word []byte, prefixes *prefixSet) bool {
	return mayMatchString(string(word), prefixes)
}

// prefixSet holds the first one or two bytes of each query term, and the
// first bytes alone for a quick refusal.
type prefixSet struct {
	heads map[string]bool
	first [256]bool
}

func newPrefixSet(terms map[string]string) *prefixSet {
	ps := &prefixSet{heads: make(map[string]bool, len(terms))}
	for t := range terms {
		if t == "" {
			continue
		}
		ps.heads[t[:min(2, len(t))]] = true
		ps.first[t[0]] = true
	}
	return ps
}

// mayMatchString is mayMatch for text starting with the word; it looks at
// four runes at most and does not allocate.
func mayMatchString(word string, prefixes *prefixSet) bool {
	c, _ := utf8.DecodeRuneInString(word)
	if c == utf8.RuneError {
		return false // a word starts with a letter, digit or mark
	}
	// The first rune decides most words: lower-cased, or normalized
	// (umlauts lose their dots, ß becomes ss), its first byte must begin a
	// query term.
	var head [utf8.UTFMax]byte
	lc := unicode.ToLower(c)
	utf8.EncodeRune(head[:], lc)
	if !prefixes.first[head[0]] {
		switch lc {
		case 'ä':
			head[0] = 'a'
		case 'ö':
			head[0] = 'o'
		case 'ü':
			head[0] = 'u'
		case 'ß':
			head[0] = 's'
		default:
			return false
		}
		if !prefixes.first[head[0]] {
			return false
		}
	}
	// Two letters of output need at most four of input (normalization
	// drops the e of ae, oe, ue).
	var lowerBuf, normBuf [4 * utf8.UTFMax]byte
	lower := lowerBuf[:0]
	runes := 0
	for _, c := range word {
		if runes == 4 {
			break
		}
		lower = utf8.AppendRune(lower, unicode.ToLower(c))
		runes++
	}
	for _, w := range [][]byte{lower, appendGermanNormalized(normBuf[:0], lower)} {
		for n := 1; n <= 2 && n <= len(w); n++ {
			if prefixes.heads[string(w[:n])] {
				return true
			}
		}
	}
	return false
}

// germanNormalize is the German normalization of bleve's de analysis
// (de.GermanNormalizeFilter), written out for the few lower-cased runes
// mayMatch looks at: umlauts lose their dots, ß becomes ss, and the e of
// ae, oe, ue is dropped.
func germanNormalize(lower []byte) []byte {
	return appendGermanNormalized(make([]byte, 0, len(lower)+2), lower)
}

// appendGermanNormalized appends germanNormalize(lower) to out.
func appendGermanNormalized(out, lower []byte) []byte {
	const (
		n = iota // after anything else
		v        // after a vowel that keeps a following e
		u        // after a, o or u: a following e is dropped
	)
	state := n
	for _, r := range string(lower) {
		switch r {
		case 'a', 'o':
			state = u
		case 'u':
			if state == n {
				state = u
			} else {
				state = v
			}
		case 'e':
			drop := state == u
			state = v
			if drop {
				continue
			}
		case 'i', 'q', 'y':
			state = v
		case 'ä':
			r, state = 'a', v
		case 'ö':
			r, state = 'o', v
		case 'ü':
			r, state = 'u', v
		case 'ß':
			out = append(out, 's')
			r, state = 's', n
		default:
			state = n
		}
		out = utf8.AppendRune(out, r)
	}
	return out
}
