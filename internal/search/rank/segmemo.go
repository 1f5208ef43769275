package rank

import (
	"runtime"
	"strconv"
	"sync"
	"weak"

	segment "github.com/blevesearch/scorch_segment_api/v2"
	zap "github.com/blevesearch/zapx/v17"
)

// Segment memos. A segment never changes once written, and its term
// dictionaries hold the terms of its deleted documents too (vocab.go), so
// the first terms of a field's dictionary within one edit of a term are an
// answer that holds as long as the segment lives. A misspelled word is
// corrected with the same lookups each time it comes back (agents retry,
// the load test's mix asks eight typos), and a project's large segment
// outlives thousands of recalls while writes add small ones beside it; each
// lookup walks the segment's FST with the edit automaton. So the answers
// are kept per segment, until the segment is gone (a cleanup drops its memo
// when the garbage collector frees it) or the memos hold segMemoBudget
// terms in all: then the segment asking for one more starts over with an
// empty memo, so all memos together stay below about
// segMemoBudget+segMemoMax terms whatever the recalls ask. Whether a term
// is in a dictionary is not kept: asking a memo (a lock and a map) cost
// more than the FST lookup it saves (BenchmarkRecallMisch, 2026-12-04).
const (
	segMemoBudget = 1 << 16
	segMemoMax    = 4096 // answers one segment keeps
)

// segMemo is one segment's answers.
type segMemo struct {
	mu   sync.Mutex
	near map[memoKey][]string // the first terms within one edit (term: fuzzyKey)
	n    int                  // answers held, each term counted
}

// memoKey is a lookup in a field's dictionary (its index in vocabFields).
type memoKey struct {
	field int
	term  string
}

// segKey is a segment by identity, without keeping it alive.
type segKey struct {
	seg  weak.Pointer[zap.Segment]
	base weak.Pointer[zap.SegmentBase]
}

var segMemos = struct {
	sync.Mutex
	m     map[segKey]*segMemo
	total int // answers held by all memos
}{m: map[segKey]*segMemo{}}

// memoOf returns s's memo, made on first use; nil for a segment type other
// than zapx v17's, whose lifetime it cannot follow.
func memoOf(s segment.Segment) *segMemo {
	var key segKey
	var cleanup func()
	switch z := s.(type) {
	case *zap.Segment:
		key.seg = weak.Make(z)
		cleanup = func() { runtime.AddCleanup(z, dropMemo, key) }
	case *zap.SegmentBase:
		key.base = weak.Make(z)
		cleanup = func() { runtime.AddCleanup(z, dropMemo, key) }
	default:
		return nil
	}
	segMemos.Lock()
	defer segMemos.Unlock()
	m := segMemos.m[key]
	if m == nil {
		m = &segMemo{}
		segMemos.m[key] = m
		cleanup()
	}
	return m
}

// dropMemo forgets a freed segment's memo.
func dropMemo(key segKey) {
	segMemos.Lock()
	defer segMemos.Unlock()
	if m := segMemos.m[key]; m != nil {
		m.mu.Lock()
		segMemos.total -= m.n
		m.mu.Unlock()
		delete(segMemos.m, key)
	}
}

// fuzzyKey names a fuzzy lookup: the term and how many terms it reads.
func fuzzyKey(term string, limit int) string { return term + "\x00" + strconv.Itoa(limit) }

// nearTerms is the memo's list of the first terms within one edit.
func (m *segMemo) nearTerms(f int, key string) ([]string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	terms, ok := m.near[memoKey{f, key}]
	return terms, ok
}

func (m *segMemo) putNear(f int, key string, terms []string) {
	m.put(1+len(terms), func() bool {
		k := memoKey{f, key}
		if _, dup := m.near[k]; dup {
			return false
		}
		if m.near == nil {
			m.near = map[memoKey][]string{}
		}
		m.near[k] = terms
		return true
	})
}

// put stores an answer of size n unless it is there (a concurrent recall
// stored it first), starting this memo over when it or all memos are full.
func (m *segMemo) put(n int, store func() bool) {
	segMemos.Lock()
	defer segMemos.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n+n > segMemoMax || segMemos.total+n > segMemoBudget {
		segMemos.total -= m.n
		m.near, m.n = nil, 0
	}
	if store() {
		m.n += n
		segMemos.total += n
	}
}
