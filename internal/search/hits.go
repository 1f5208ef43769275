package search

import (
	"context"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	unitok "github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/search"

	"munin/internal/memory"
)

// Hits are read from the database, not from the index. The index stores no
// text and keeps no term vectors: both cost more memory than the text itself
// (see memory_test.go). Each hit shows its entry's latest version, read after
// the search: all hits of a project in one statement when the Source can
// (LatestMany), so a hit costs neither a stored-field lookup in the index (an
// _id lookup across all segments) nor a statement of its own. An entry
// forgotten between the search and the read is left out, so a forgotten
// entry never comes back (invariant 3); one replaced meanwhile shows its new
// version. The snippet's marks are found by analyzing the content with the
// same analyzers as the query, which is what term locations recorded.

// match is one of bleve's matches and the project whose index found it.
type match struct {
	ref memory.ProjectRef
	dm  *search.DocumentMatch
}

// hitsFrom turns bleve's matches into hits, in order, leaving out entries
// forgotten since the search. text is the query text, for the snippet marks.
func (r *Registry) hitsFrom(ctx context.Context, text string, matches []match) ([]memory.Hit, error) {
	read, err := r.readHits(ctx, text, matches)
	if err != nil {
		return nil, err
	}
	hits := make([]memory.Hit, 0, len(read))
	for _, h := range read {
		if h != nil {
			hits = append(hits, *h)
		}
	}
	return hits, nil
}

// readHits is hitsFrom with one entry per match, nil where the entry is gone.
func (r *Registry) readHits(ctx context.Context, text string, matches []match) ([]*memory.Hit, error) {
	es := make([]entryRef, len(matches))
	for i, m := range matches {
		es[i] = entryRef{m.ref, m.dm.ID}
	}
	latest, failed, err := r.latestOf(ctx, es)
	if err != nil {
		return nil, err
	}
	for i, err := range failed {
		return nil, memory.Internal(fmt.Errorf("search %s: read hit %s: %w", es[i].ref, es[i].slug, err))
	}
	hits := make([]*memory.Hit, len(matches))
	var mk *marker // built on the first hit
	for i, m := range matches {
		v, ok := latest[i]
		if !ok {
			continue
		}
		if mk == nil {
			mk = r.newMarker(text)
		}
		h := &memory.Hit{
			Slug: m.dm.ID, Score: m.dm.Score, Title: v.Title, Version: v.Version,
			UpdatedAt: v.CreatedAt, Tags: append([]string{}, v.Tags...), Project: m.ref,
			Match: memory.MatchWords,
		}
		h.Snippet = snippet(v.Content, mk.spans(v.Content))
		hits[i] = h
	}
	return hits, nil
}

// entryRef names an entry of a project.
type entryRef struct {
	ref  memory.ProjectRef
	slug string
}

// manySource is a Source that can read several slugs in one statement (the
// store can); a recall's hits then cost one read per project.
type manySource interface {
	LatestMany(ctx context.Context, ref memory.ProjectRef, slugs []string) (map[string]memory.Version, error)
}

// latestOf reads the latest live version of each entry of es, keyed by its
// position; an entry forgotten or gone has none. A Source that can (the
// store) reads each project's entries in one statement. A read that failed
// is in failed, by position; err is only the caller's context ending.
func (r *Registry) latestOf(ctx context.Context, es []entryRef) (latest map[int]memory.Version, failed map[int]error, err error) {
	latest, failed = make(map[int]memory.Version, len(es)), map[int]error{}
	got := func(i int, v memory.Version, err error) {
		switch {
		case memory.ErrorCode(err) == memory.CodeNotFound:
		case err != nil:
			failed[i] = err
		case !v.Deleted:
			latest[i] = v
		}
	}
	many, ok := r.src.(manySource)
	if !ok || len(es) < 2 {
		for i, e := range es {
			v, err := r.src.Latest(ctx, e.ref, e.slug)
			got(i, v, err)
		}
	} else {
		byRef := map[memory.ProjectRef][]int{}
		var refs []memory.ProjectRef
		for i, e := range es {
			if _, seen := byRef[e.ref]; !seen {
				refs = append(refs, e.ref)
			}
			byRef[e.ref] = append(byRef[e.ref], i)
		}
		for _, ref := range refs {
			at := byRef[ref]
			slugs := make([]string, len(at))
			for j, i := range at {
				slugs[j] = es[i].slug
			}
			vs, err := many.LatestMany(ctx, ref, slugs)
			for _, i := range at {
				v, ok := vs[es[i].slug]
				switch {
				case err != nil:
					got(i, v, err)
				case ok:
					got(i, v, nil)
				}
			}
		}
	}
	if ctxErr := ctx.Err(); ctxErr != nil && len(failed) > 0 {
		return nil, nil, fmt.Errorf("search: read hits: %w", ctxErr)
	}
	return latest, failed, nil
}

// snippetAnalyzers are the analyzers of the content fields, in the order of
// a marker's terms.
var snippetAnalyzers = []string{analyzerEN}

// marker finds a recall's query terms in the contents of its hits, for the
// snippets' marks: what term locations held for the matched terms. It is
// made once per recall, because analyzing words is the dear part and the
// hits of one recall share most of their words.
type marker struct {
	analyzers []analysis.Analyzer
	terms     []map[string]bool   // per analyzer: the query's terms
	prefixes  []*prefixSet        // per analyzer: their first bytes
	pieces    []map[string][]span // per analyzer: the marks in a piece of content, relative to it
}

// newMarker analyzes the query text as the content fields' match queries do.
func (r *Registry) newMarker(text string) *marker {
	m := &marker{}
	for _, name := range snippetAnalyzers {
		a := r.mapping.AnalyzerNamed(name)
		terms := map[string]bool{}
		for _, tok := range a.Analyze([]byte(text)) {
			terms[string(tok.Term)] = true
		}
		m.analyzers = append(m.analyzers, a)
		m.terms = append(m.terms, terms)
		m.prefixes = append(m.prefixes, newPrefixSet(terms))
		m.pieces = append(m.pieces, map[string][]span{})
	}
	return m
}

// spans returns the byte ranges of content whose analyzed term is a query
// term of the same analyzer. Segmenting and stemming every word of a 64 KB
// entry takes milliseconds, so only words that can stem to a query term are
// analyzed: a stem keeps its word's first two letters, lower-cased and, for
// the German stem, with umlauts normalized (both stemmers change endings
// only). The content is first cut at ASCII whitespace, where every word ends
// (the tokenizer never joins across it), and only pieces where a word may
// start with a query term's prefix are segmented and analyzed, each distinct
// piece once per recall.
func (m *marker) spans(content string) []span {
	var spans []span
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
				rel = m.pieceSpans(i, piece)
				m.pieces[i][piece] = rel
			}
			for _, s := range rel {
				spans = append(spans, span{start + s.start, start + s.end})
			}
			start = end
		}
	}
	return spans
}

// pieceSpans is spans for one piece of content without whitespace, with
// analyzer i.
func (m *marker) pieceSpans(i int, piece string) []span {
	var rel []span
	for _, word := range wordTokenizer.Tokenize([]byte(piece)) {
		if !mayMatch(word.Term, m.prefixes[i]) {
			continue
		}
		for _, tok := range m.analyzers[i].Analyze(word.Term) {
			if m.terms[i][string(tok.Term)] {
				rel = append(rel, span{word.Start + tok.Start, word.Start + tok.End})
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

func newPrefixSet(terms map[string]bool) *prefixSet {
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
