package text

import (
	"strings"
	"sync"
	"sync/atomic"
)

// Memos of analysis. Agents ask the same queries again and again (the load
// test's mix is 24 texts), and analyzing a query (tokenizer, stop filters,
// both stemmers) was a tenth of a recall's CPU at 500 entries, done three
// times: for the ranking's terms, the snippets' marker and the compound
// splits' stems. The analyzers never change while the process runs, so an
// analysis is a function of its text and is kept: per memo at most
// memoEntries texts, all dropped at once when it is full (a flood of
// distinct queries costs one analysis each, as before, and bounded memory).
// What a memo hands out is shared between recalls and never changed.
const memoEntries = 2048

// memo maps a text to what analyzing it gave.
type memo[V any] struct {
	mu      sync.Mutex
	m       map[string]V
	onReset func() // when not nil, called when the memo starts over
}

// get returns make(key), made at most once while the memo keeps it.
func (c *memo[V]) get(key string, make func(string) V) V {
	c.mu.Lock()
	v, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return v
	}
	v = make(key)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= memoEntries {
		if c.m != nil && c.onReset != nil {
			c.onReset()
		}
		c.m = map[string]V{}
	}
	c.m[key] = v
	c.mu.Unlock()
	return v
}

var (
	queryTerms   memo[Terms]
	markerTerms  = memo[*markerQuery]{onReset: func() { sharedPieces.Store(0) }}
	termMarkers  = memo[*markerQuery]{onReset: func() { sharedPieces.Store(0) }}
	stemsOfWords memo[[]string]
)

// maxSharedPieces bounds the pieces of content whose marks all of
// NewMarker's memos keep together (each a piece's text and its marks, some
// tens of bytes): past it no more are kept until the marker memo starts
// over. sharedPieces counts them.
const maxSharedPieces = 1 << 16

// maxSharedPieceBytes is the longest piece kept: words are short, while
// one piece of an entry without spaces can be 64 KiB, and 65,536 of those
// would be 4 GiB. With it the pieces' texts stay within 4 MiB.
const maxSharedPieceBytes = 64

var sharedPieces atomic.Int64

// pieceMemo is the marks of pieces of content a query text's markers found
// (Marker.scan), per analyzer; read and written by concurrent recalls.
type pieceMemo struct {
	mu sync.Mutex
	m  []map[string][]Found
}

func newPieceMemo(analyzers int) *pieceMemo {
	pm := &pieceMemo{}
	for range analyzers {
		pm.m = append(pm.m, map[string][]Found{})
	}
	return pm
}

// get returns the marks of piece for analyzer i if a marker found them.
func (pm *pieceMemo) get(i int, piece string) ([]Found, bool) {
	if pm == nil {
		return nil, false
	}
	pm.mu.Lock()
	defer pm.mu.Unlock()
	rel, ok := pm.m[i][piece]
	return rel, ok
}

// put keeps the marks of piece, a copy of its text (not the content it is
// cut from), while the budget lasts.
func (pm *pieceMemo) put(i int, piece string, rel []Found) {
	if pm == nil || len(piece) > maxSharedPieceBytes || sharedPieces.Load() >= maxSharedPieces {
		return
	}
	pm.mu.Lock()
	defer pm.mu.Unlock()
	if _, ok := pm.m[i][piece]; !ok {
		pm.m[i][strings.Clone(piece)] = rel
		sharedPieces.Add(1)
	}
}

// AnalyzeQuery is Analyze of a recall's text, kept in a memo: the Terms are
// shared and must not be changed.
func AnalyzeQuery(text string) Terms { return queryTerms.get(text, Analyze) }
