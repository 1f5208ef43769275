package rank

import (
	"container/list"
	"sync"

	"github.com/blevesearch/vellum/levenshtein"
)

// automataBytes bounds the memoised one-edit automata. Building one takes
// 0.1–2 ms (5 to 40 letters) — as much as the rest of a recall — and the
// same misspellings come back (agents retry, people copy queries), so the
// latest are kept: about 45 automata of ten-letter words.
const automataBytes = 4 << 20

// automatonBytesPerByte estimates an automaton's size from its word's
// length: each state holds 256 transitions (1 KiB), and a one-edit
// automaton has about ten to fifteen states per byte of the word (measured:
// 92 KB for 10 bytes, 600 KB for 40).
const automatonBytesPerByte = 16 << 10

// oneEditAutomata is the process's memo of one-edit automata by word, least
// recently used first out. An automaton is read-only once built, so
// concurrent recalls share it.
var oneEditAutomata = newAutomata(automataBytes)

// automata is an LRU of automata bounded by their estimated bytes.
type automata struct {
	mu    sync.Mutex
	max   int
	bytes int
	order *list.List // of *automaton, most recently used first
	byKey map[string]*list.Element
}

type automaton struct {
	word string
	dfa  *levenshtein.DFA
}

func newAutomata(maxBytes int) *automata {
	return &automata{max: maxBytes, order: list.New(), byKey: map[string]*list.Element{}}
}

// oneEdit returns the automaton of the words within one edit of word,
// built once while it stays among the recently used.
func (a *automata) oneEdit(word string) (*levenshtein.DFA, error) {
	a.mu.Lock()
	if e, ok := a.byKey[word]; ok {
		a.order.MoveToFront(e)
		dfa := e.Value.(*automaton).dfa
		a.mu.Unlock()
		return dfa, nil
	}
	a.mu.Unlock()
	lb, err := editsOfOne()
	if err != nil {
		return nil, err
	}
	dfa, err := lb.BuildDfa(word, 1)
	if err != nil {
		return nil, err
	}
	a.add(word, dfa)
	return dfa, nil
}

// add keeps dfa for word, dropping the least recently used beyond max. A
// word too long for the whole budget is not kept.
func (a *automata) add(word string, dfa *levenshtein.DFA) {
	size := len(word) * automatonBytesPerByte
	if size > a.max {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.byKey[word]; ok {
		return // built twice at once: the first one stays
	}
	a.byKey[word] = a.order.PushFront(&automaton{word: word, dfa: dfa})
	a.bytes += size
	for a.bytes > a.max {
		last := a.order.Back()
		old := a.order.Remove(last).(*automaton)
		delete(a.byKey, old.word)
		a.bytes -= len(old.word) * automatonBytesPerByte
	}
}
