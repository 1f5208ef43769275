package rank

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	index "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
	"github.com/blevesearch/vellum/levenshtein"

	"munin/internal/search/text"
)

// The vocabulary compounds are split against and typos corrected to is the
// searched projects' own term dictionary: the words their entries use, the
// team's jargon included, and nothing else. No general word list ships with
// Munin (the German lists in Debian, igerman98, are GPL), and a word no entry
// uses could not find anything anyway. The dictionary holds stems, so a
// candidate word is stemmed as the index stems it and known when one of its
// stems is in the title or content dictionary of any searched project.
var vocabFields = []string{text.FieldContent, text.FieldTitle}

// maxVocabLookups bounds the distinct terms one recall looks up in the
// dictionaries (each a lookup per field and project): the compound splits
// and joins of a query of MaxQueryTerms words stay far below it, and a
// hostile query cannot make more.
const maxVocabLookups = 1024

// vocab answers whether a term is in the dictionary of any searched index.
// It opens one reader per index on its first lookup (a recall whose words
// need none opens none) and is closed after the recall.
//
// It reads the term dictionaries of the index snapshot's segments directly.
// bleve's own FieldDictContains and FieldDictFuzzy start a goroutine per
// segment and field on every call, and the fuzzy one builds the edit
// automaton once per field: together most of a typo lookup's cost and 5 % of
// a recall's at 10,000 entries. A segment's dictionary is its term list
// (kept in memory by the segment once loaded) and holds the terms of its
// deleted documents until a merge, as bleve's merged views do.
type vocab struct {
	ctx     context.Context
	idxs    []bleve.Index
	opened  bool
	err     error // opening failed: every term is unknown
	readers []index.IndexReader
	segs    [][]*scorch.SegmentSnapshot // per reader: its snapshot's segments
	dicts   [][]fieldDict               // per reader: one per vocab field, a dictionary opened on its first lookup
	memos   [][]*segMemo                // per reader and segment: its fuzzy answers (segmemo.go), looked up on first use
	noMemo  [][]bool                    // per reader and segment: it has none (not a zapx v17 segment)
	known   map[string]bool
	// prefixes caches prefixed: the terms found per prefix.
	prefixes map[string][]string
	lookups  int
}

// fieldDict is one field's dictionary in every segment of a snapshot, nil
// until opened. Opening one allocates, and a known word is mostly found in
// the first one looked at: a recall of known words opens one or two of them,
// not every field's in every segment (TestVocabOpensDictionariesLazily).
type fieldDict []segment.TermDictionary

func newVocab(ctx context.Context, idxs []bleve.Index) *vocab {
	return &vocab{ctx: ctx, idxs: idxs, known: map[string]bool{}, prefixes: map[string][]string{}}
}

// open opens the dictionaries once; it tells whether they are usable. An
// index type other than scorch offers none, and nothing is expanded.
func (v *vocab) open() bool {
	if v.opened {
		return v.err == nil && v.readers != nil
	}
	v.opened = true
	for _, idx := range v.idxs {
		adv, err := idx.Advanced()
		if err != nil {
			v.err = err
			break
		}
		rd, err := adv.Reader()
		if err != nil {
			v.err = err
			break
		}
		v.readers = append(v.readers, rd)
		snap, ok := rd.(*scorch.IndexSnapshot)
		if !ok {
			v.close()
			return false
		}
		// Largest segment first: a known word is most likely there, and
		// contains stops at the first dictionary holding it. The order
		// changes no answer: fuzzy and prefixed sort what they collect.
		segs := slices.Clone(snap.Segments())
		slices.SortStableFunc(segs, func(a, b *scorch.SegmentSnapshot) int {
			return cmp.Compare(b.Segment().Count(), a.Segment().Count())
		})
		fds := make([]fieldDict, len(vocabFields))
		for f := range fds {
			fds[f] = make(fieldDict, len(segs))
		}
		v.segs = append(v.segs, segs)
		v.dicts = append(v.dicts, fds)
		v.memos = append(v.memos, make([]*segMemo, len(segs)))
		v.noMemo = append(v.noMemo, make([]bool, len(segs)))
	}
	if v.err != nil {
		v.close()
		return false
	}
	return true
}

func (v *vocab) close() {
	for _, rd := range v.readers {
		_ = rd.Close()
	}
	v.readers, v.segs, v.dicts, v.memos, v.noMemo = nil, nil, nil, nil, nil
}

// dict is field f's dictionary in segment s of reader i, opened on its first
// use; nil when opening failed (v.err says why: the recall fails).
func (v *vocab) dict(i, f, s int) segment.TermDictionary {
	if d := v.dicts[i][f][s]; d != nil {
		return d
	}
	d, err := v.segs[i][s].Segment().Dictionary(vocabFields[f])
	if err != nil {
		v.err = err
		return nil
	}
	v.dicts[i][f][s] = d
	return d
}

// memo is segment s of reader i's memo, looked up on first use (a recall
// of known words needs none); nil if it has none.
func (v *vocab) memo(i, s int) *segMemo {
	if v.memos[i][s] == nil && !v.noMemo[i][s] {
		v.memos[i][s] = memoOf(v.segs[i][s].Segment())
		v.noMemo[i][s] = v.memos[i][s] == nil
	}
	return v.memos[i][s]
}

// eachDict calls fn with every dictionary (per reader and field, the
// segments in order) until fn returns false; it stops at one that fails to
// open.
func (v *vocab) eachDict(fn func(i, f int, d segment.TermDictionary) bool) {
	for i := range v.dicts {
		for f := range v.dicts[i] {
			for s := range v.dicts[i][f] {
				d := v.dict(i, f, s)
				if d == nil || !fn(i, f, d) {
					return
				}
			}
		}
	}
}

// hasTerm tells whether term is in a dictionary. Past maxVocabLookups
// distinct terms every new term is unknown: the expansion stops growing.
func (v *vocab) hasTerm(term string) bool {
	if known, ok := v.known[term]; ok {
		return known
	}
	if v.lookups >= maxVocabLookups || v.ctx.Err() != nil || !v.open() {
		return false
	}
	v.lookups++
	found := v.contains(term)
	v.known[term] = found
	return found
}

// contains looks term up in every segment of every field and index. (A
// dictionary lookup is cheaper than asking a segment's memo, segmemo.go:
// only the fuzzy lookups are kept there.)
func (v *vocab) contains(term string) bool {
	found := false
	v.eachDict(func(_, _ int, d segment.TermDictionary) bool {
		ok, err := d.Contains([]byte(term))
		found = err == nil && ok
		return !found
	})
	return found
}

// prefixed returns the terms of the title and content dictionaries that
// begin with prefix and are longer than it: per index, field and segment
// the first limit of them in term order, then the first limit of all, so a
// recall over several projects finds what one index holding them all would.
// It counts as one lookup towards maxVocabLookups: a range of one term
// dictionary (an FST) is found as a term is, and at most limit terms are
// read from it.
func (v *vocab) prefixed(prefix string, limit int) []string {
	if terms, ok := v.prefixes[prefix]; ok {
		return terms
	}
	if v.lookups >= maxVocabLookups || v.ctx.Err() != nil || !v.open() {
		return nil
	}
	v.lookups++
	start := []byte(prefix)
	end := prefixEnd(start)
	var terms []string
	v.eachDict(func(_, _ int, d segment.TermDictionary) bool {
		// A nil automaton matches every term of the range, as bleve's
		// own FieldDictPrefix asks for it.
		it := d.AutomatonIterator(nil, start, end)
		for n := 0; n < limit; {
			e, err := it.Next()
			if err != nil || e == nil {
				break
			}
			if e.Term != prefix {
				terms = append(terms, e.Term)
				n++
			}
		}
		return true
	})
	slices.Sort(terms)
	terms = slices.Compact(terms)
	terms = terms[:min(len(terms), limit)]
	v.prefixes[prefix] = terms
	return terms
}

// prefixEnd is the first key after every key beginning with prefix: the
// exclusive end of its range (nil: no end), as bleve computes it.
func prefixEnd(prefix []byte) []byte {
	end := slices.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// hasWord tells whether a lower-case word is known: one of its stems is.
func (v *vocab) hasWord(lower string) bool {
	for _, s := range text.StemsOf(lower) {
		if v.hasTerm(s) {
			return true
		}
	}
	return false
}

// hasCompound tells whether a lower-case compound is known by its German
// stem: the stemmer normalizes umlauts and inflection, so "kundenwünsche"
// and "kundenwunsch" meet there, and an indexed word always has it (every
// word is indexed with both stems), so the English stem adds nothing.
func (v *vocab) hasCompound(lower string) bool {
	stems := text.StemsOf(lower)
	return v.hasTerm(stems[len(stems)-1])
}

// hasAnyStem tells whether one of a query word's stems is known.
func (v *vocab) hasAnyStem(stems []string) bool {
	for _, s := range stems {
		if v.hasTerm(s) {
			return true
		}
	}
	return false
}

// df is how many documents of all searched indexes hold term in their
// content: how common a typo's candidate correction is.
func (v *vocab) df(term string) uint64 {
	if !v.open() {
		return 0
	}
	var n uint64
	for _, rd := range v.readers {
		tfr, err := rd.TermFieldReader(v.ctx, []byte(term), text.FieldContent, false, false, false)
		if err != nil {
			continue
		}
		n += tfr.Count()
		_ = tfr.Close()
	}
	return n
}

// editsOfOne builds the automata of the terms within one edit, transposition
// included, as bleve's fuzzy dictionaries do. Building the builder takes
// milliseconds, so it is made once, on the first typo lookup.
var editsOfOne = sync.OnceValues(func() (*levenshtein.LevenshteinAutomatonBuilder, error) {
	return levenshtein.NewLevenshteinAutomatonBuilder(1, true)
})

// fuzzy calls fn with the terms of the title and content dictionaries within
// one edit (Levenshtein) of term, in every index: per index and field the
// first limit of them in term order, each once. all tells that these were
// all of them: no dictionary holds another term within one edit.
func (v *vocab) fuzzy(term string, limit int, fn func(string)) (all bool) {
	if !v.open() {
		return false
	}
	all = true
	// The automaton is built (or taken from its memo) only when a
	// segment's memo does not know the answer: a memo's answer was found
	// with it, so it builds for this term.
	var dfa *levenshtein.DFA
	key := fuzzyKey(term, limit)
	for i := range v.dicts {
		for f := range v.dicts[i] {
			var terms []string
			for s := range v.dicts[i][f] {
				m := v.memo(i, s)
				if m != nil {
					if near, ok := m.nearTerms(f, key); ok {
						terms = append(terms, near...)
						all = all && len(near) < limit
						continue
					}
				}
				if dfa == nil {
					var err error
					if dfa, err = oneEditAutomata.oneEdit(term); err != nil {
						return false
					}
				}
				d := v.dict(i, f, s)
				if d == nil {
					return false
				}
				near, complete := firstTerms(d.AutomatonIterator(dfa, nil, nil), limit)
				if m != nil && complete {
					m.putNear(f, key, near)
				}
				terms = append(terms, near...)
				all = all && complete && len(near) < limit
			}
			slices.Sort(terms)
			terms = slices.Compact(terms)
			all = all && len(terms) <= limit
			for _, t := range terms[:min(len(terms), limit)] {
				fn(t)
			}
		}
	}
	return all
}

// absent records that term is in no dictionary without looking it up, as
// hasTerm would after looking (the caller knows: fuzzy listed all terms
// near it), so the lookups counted towards maxVocabLookups stay the same.
func (v *vocab) absent(term string) {
	if _, ok := v.known[term]; ok {
		return
	}
	if v.lookups >= maxVocabLookups || v.ctx.Err() != nil || !v.open() {
		return
	}
	v.lookups++
	v.known[term] = false
}

// firstTerms reads the first limit terms of it; complete is false when
// reading failed before (what was read is returned, and not kept).
func firstTerms(it segment.DictionaryIterator, limit int) (terms []string, complete bool) {
	for range limit {
		e, err := it.Next()
		if err != nil {
			return terms, false
		}
		if e == nil {
			break
		}
		terms = append(terms, e.Term)
	}
	return terms, true
}
