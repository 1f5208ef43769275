// Package limit is Munin's one keyed limiter. Every fairness limit of the
// server — per key, per project, per client address, and the shares of the
// global tables — is a Keyed: for each key (an agent's key id, a project, an
// address) a count in flight and a token bucket, with memory that follows
// the keys in use. Limits of several levels are taken together with Acquire,
// so a request refused by its project's limit leaves its key's count as it
// was. (tailscale's util/limiter is the model: one keyed token bucket with
// bounded memory.)
package limit

import (
	"context"
	"sync"
	"time"
)

// Rule is what a Keyed enforces for each key. A zero field is no limit of
// that kind.
type Rule struct {
	// InFlight is how many units a key may hold at once (≤ 0: no limit).
	InFlight int
	// Rate is how many units a key may take per second (≤ 0: no limit),
	// with bursts of Burst (at least 1).
	Rate  float64
	Burst int
	// MaxKeys bounds how many keys have state at once (≤ 0: no bound). When
	// it is reached and no idle state can be dropped, a new key is refused
	// (OverKeys): a flood of new keys (client addresses) cannot grow memory.
	MaxKeys int
}

func (r Rule) off() bool { return r.InFlight <= 0 && r.Rate <= 0 }

// Verdict is the outcome of taking a unit.
type Verdict int

// The verdicts; every one but Admitted is a refusal.
const (
	Admitted Verdict = iota
	OverInFlight
	OverRate
	OverKeys
)

// Keyed holds the state of every key in use. A nil *Keyed admits everything.
type Keyed[K comparable] struct {
	rule Rule
	now  func() time.Time
	// idle is how long an unused key's state outlives its last use; by then
	// its bucket is full again, so dropping it changes nothing.
	idle time.Duration

	mu        sync.Mutex
	keys      map[K]*state
	lastSweep time.Time
}

type state struct {
	busy    int
	waiting int
	bucket  *Bucket // nil without a rate
	seen    time.Time
	// freed is closed (and replaced) whenever a unit ends, waking waiters.
	freed chan struct{}
}

// minIdle is the least time an unused key's state is kept, and how often
// idle states are swept.
const minIdle = time.Minute

// New returns a limiter for rule, or nil (no limits) if rule limits
// nothing. now is the clock (nil: time.Now).
func New[K comparable](rule Rule, now func() time.Time) *Keyed[K] {
	if rule.off() {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	rule.Burst = max(rule.Burst, 1)
	idle := minIdle
	if rule.Rate > 0 {
		// Time for an empty bucket to fill up again.
		idle = max(idle, time.Duration(float64(rule.Burst)/rule.Rate*float64(time.Second)))
	}
	return &Keyed[K]{rule: rule, now: now, idle: idle, keys: map[K]*state{}}
}

// Rule is the rule the limiter enforces (the zero Rule for nil).
func (l *Keyed[K]) Rule() Rule {
	if l == nil {
		return Rule{}
	}
	return l.rule
}

// stateLocked returns k's state, made if new; nil if MaxKeys is reached.
func (l *Keyed[K]) stateLocked(k K, now time.Time) *state {
	l.sweepLocked(now, false)
	st := l.keys[k]
	if st == nil {
		if l.rule.MaxKeys > 0 && len(l.keys) >= l.rule.MaxKeys {
			l.sweepLocked(now, true)
			if len(l.keys) >= l.rule.MaxKeys {
				return nil
			}
		}
		st = &state{freed: make(chan struct{})}
		if l.rule.Rate > 0 {
			st.bucket = NewBucket(l.rule.Rate, l.rule.Burst)
		}
		l.keys[k] = st
	}
	st.seen = now
	return st
}

// take takes one unit of k: one in flight (unless rateOnly) and one token.
// On refusal, retry is when to try again (at least a second).
func (l *Keyed[K]) take(k K, rateOnly bool) (v Verdict, retry time.Duration) {
	if l == nil {
		return Admitted, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	st := l.stateLocked(k, now)
	switch {
	case st == nil:
		return OverKeys, time.Second
	case !rateOnly && l.rule.InFlight > 0 && st.busy >= l.rule.InFlight:
		return OverInFlight, time.Second
	case st.bucket != nil:
		if wait, _ := st.bucket.Take(now, 1); wait > 0 {
			return OverRate, max(time.Second, wait)
		}
	}
	if !rateOnly {
		st.busy++
	}
	return Admitted, 0
}

// done ends one unit of k in flight; undo also gives its token back (a
// later limit refused the request the unit was taken for).
func (l *Keyed[K]) done(k K, rateOnly, undo bool) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.keys[k]
	if st == nil {
		return
	}
	if undo && st.bucket != nil {
		st.bucket.Give(l.now(), 1)
	}
	if !rateOnly {
		st.busy--
		close(st.freed)
		st.freed = make(chan struct{})
	}
}

// Wait takes one unit of k in flight, waiting while k holds InFlight units,
// until ctx ends (then ctx's error). It takes no token: a waiting limit
// bounds work at once, not work per second. The returned release must be
// called once the unit's work is done.
func (l *Keyed[K]) Wait(ctx context.Context, k K) (release func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	l.mu.Lock()
	st := l.stateLocked(k, l.now())
	if st == nil {
		l.mu.Unlock()
		return nil, errTooManyKeys
	}
	st.waiting++
	for l.rule.InFlight > 0 && st.busy >= l.rule.InFlight {
		freed := st.freed
		l.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			l.mu.Lock()
			st.waiting--
			l.mu.Unlock()
			return nil, ctx.Err()
		}
		l.mu.Lock()
	}
	st.waiting--
	st.busy++
	l.mu.Unlock()
	return onceFunc(func() { l.done(k, false, false) }), nil
}

// Busy is how many units k holds now.
func (l *Keyed[K]) Busy(k K) int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if st := l.keys[k]; st != nil {
		return st.busy
	}
	return 0
}

// Len is the number of keys with state (memory follows the keys in use).
func (l *Keyed[K]) Len() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// sweepLocked drops the state of keys with nothing in flight or waiting
// whose bucket is full and that were not used for l.idle — at most once a
// minute unless forced.
func (l *Keyed[K]) sweepLocked(now time.Time, force bool) {
	if !force && now.Sub(l.lastSweep) < minIdle {
		return
	}
	l.lastSweep = now
	for k, st := range l.keys {
		full := st.bucket == nil || st.bucket.Full(now)
		if st.busy == 0 && st.waiting == 0 && full && now.Sub(st.seen) >= l.idle {
			delete(l.keys, k)
		}
	}
}

func onceFunc(f func()) func() {
	var once sync.Once
	return func() { once.Do(f) }
}
