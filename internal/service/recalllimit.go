package service

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"munin/internal/memory"
)

// Defaults of the per-key recall limits (Options.RecallRate, RecallBurst,
// RecallConcurrency). An agent thinks between calls and recalls a few times
// a minute; 10 a second with a burst of 50 leaves it room, while one key can
// no longer fill the search log or keep the CPU busy for everyone.
const (
	DefaultRecallRate        = 10
	DefaultRecallBurst       = 50
	DefaultRecallConcurrency = 4
)

// recallIdleSweep is how often the limiter drops the state of keys that have
// not recalled for a while, so its memory follows the keys in use.
const recallIdleSweep = time.Minute

// recallLimiter bounds the recalls of each key: a token bucket (rate, burst)
// and a number running at once. Over either limit a recall is refused at
// once with budget_exhausted and a Retry-After, rather than queued: a waiting
// recall would hold its connection and one of the server's admission slots
// (--max-inflight), so one key's excess would still crowd out the others.
type recallLimiter struct {
	rate       rate.Limit // 0: no rate limit
	burst      int
	concurrent int // 0: no limit on recalls at once
	now        func() time.Time
	// idle is how long a key's state outlives its last recall: by then its
	// bucket is full again, so dropping it changes nothing.
	idle time.Duration

	mu        sync.Mutex
	keys      map[int64]*keyRecalls
	lastSweep time.Time
}

// keyRecalls is one key's state.
type keyRecalls struct {
	bucket  *rate.Limiter // nil without a rate limit
	running int
	last    time.Time
}

// newRecallLimiter builds the limiter; perSecond or concurrent ≤ 0 switches
// that limit off.
func newRecallLimiter(perSecond float64, burst, concurrent int, now func() time.Time) *recallLimiter {
	l := &recallLimiter{burst: burst, concurrent: max(concurrent, 0), now: now, idle: recallIdleSweep, keys: map[int64]*keyRecalls{}}
	if perSecond > 0 {
		l.rate = rate.Limit(perSecond)
		// Time for an empty bucket to fill up again.
		refill := time.Duration(float64(burst) / perSecond * float64(time.Second))
		l.idle = max(l.idle, refill)
	}
	return l
}

// acquire admits one recall of key or says why not; release must be called
// when an admitted recall is done.
func (l *recallLimiter) acquire(key memory.Key) (release func(), err error) {
	if l.rate == 0 && l.concurrent == 0 {
		return func() {}, nil
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	k := l.keys[key.ID]
	if k == nil {
		k = &keyRecalls{}
		if l.rate > 0 {
			k.bucket = rate.NewLimiter(l.rate, l.burst)
		}
		l.keys[key.ID] = k
	}
	k.last = now
	if l.concurrent > 0 && k.running >= l.concurrent {
		e := memory.Errorf(memory.CodeBudgetExhausted, "key %d (%s) may run %d recalls at once; retry in 1 s", key.ID, key.Agent, l.concurrent)
		e.RetryAfter = time.Second
		return nil, e
	}
	if k.bucket != nil && !k.bucket.AllowN(now, 1) {
		// The bucket holds less than one token: the next one is this far off.
		wait := time.Duration((1 - k.bucket.TokensAt(now)) / float64(l.rate) * float64(time.Second))
		secs := max(1, int(math.Ceil(wait.Seconds())))
		e := memory.Errorf(memory.CodeBudgetExhausted, "key %d (%s) may recall %g times per second; retry in %d s", key.ID, key.Agent, float64(l.rate), secs)
		e.RetryAfter = time.Duration(secs) * time.Second
		return nil, e
	}
	k.running++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			k.running--
			l.mu.Unlock()
		})
	}, nil
}

// sweep drops keys idle for longer than l.idle, at most once per
// recallIdleSweep; l.mu is held.
func (l *recallLimiter) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < recallIdleSweep {
		return
	}
	l.lastSweep = now
	for id, k := range l.keys {
		if k.running == 0 && now.Sub(k.last) > l.idle {
			delete(l.keys, id)
		}
	}
}

// size is the number of keys the limiter holds state for (tests).
func (l *recallLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// recallLimiter builds the limiter the options ask for, defaults applied.
func (o Options) recallLimiter() *recallLimiter {
	perSecond, burst, concurrent := o.RecallRate, o.RecallBurst, o.RecallConcurrency
	if perSecond == 0 {
		perSecond = DefaultRecallRate
	}
	if burst <= 0 {
		burst = DefaultRecallBurst
	}
	if concurrent == 0 {
		concurrent = DefaultRecallConcurrency
	}
	return newRecallLimiter(perSecond, burst, concurrent, o.Now)
}
