package text

import "sync"

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
	mu sync.Mutex
	m  map[string]V
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
		c.m = map[string]V{}
	}
	c.m[key] = v
	c.mu.Unlock()
	return v
}

var (
	queryTerms   memo[Terms]
	markerTerms  memo[*markerQuery]
	stemsOfWords memo[[]string]
)

// AnalyzeQuery is Analyze of a recall's text, kept in a memo: the Terms are
// shared and must not be changed.
func AnalyzeQuery(text string) Terms { return queryTerms.get(text, Analyze) }
