package limit

import (
	"errors"
	"time"
)

var errTooManyKeys = errors.New("too many keys with state")

// Slot is one limit a request must pass: a key of a Keyed. Acquire takes
// several at once.
type Slot struct {
	take func() (Verdict, time.Duration)
	done func(undo bool)
}

// Slot is k's unit in l: one in flight and one token.
func (l *Keyed[K]) Slot(k K) Slot {
	return Slot{
		take: func() (Verdict, time.Duration) { return l.take(k, false) },
		done: func(undo bool) { l.done(k, false, undo) },
	}
}

// RateSlot is k's token in l alone: for long-lived requests (a stream) whose
// number has its own cap elsewhere.
func (l *Keyed[K]) RateSlot(k K) Slot {
	return Slot{
		take: func() (Verdict, time.Duration) { return l.take(k, true) },
		done: func(undo bool) { l.done(k, true, undo) },
	}
}

// Refusal says which slot refused and why.
type Refusal struct {
	// Index is the position of the refusing slot in Acquire's arguments.
	Index   int
	Verdict Verdict
	// RetryAfter is when to try again, at least a second.
	RetryAfter time.Duration
}

// Acquire takes every slot, in order, or none: when one refuses, the units
// already taken are given back (tokens too), so a request refused by a
// later limit costs the earlier ones nothing. release ends the units; it
// may be called more than once.
func Acquire(slots ...Slot) (release func(), refused *Refusal) {
	for i, s := range slots {
		if v, retry := s.take(); v != Admitted {
			for j := i - 1; j >= 0; j-- {
				slots[j].done(true)
			}
			return nil, &Refusal{Index: i, Verdict: v, RetryAfter: retry}
		}
	}
	return onceFunc(func() {
		for _, s := range slots {
			s.done(false)
		}
	}), nil
}
