package httpserver

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"munin/internal/api"
	"munin/internal/memory"
	"munin/internal/service"
)

// Defaults of the limits per key. The server-wide limit (DefaultMaxInFlight)
// keeps the server from queueing; these keep one key from taking that limit,
// and with it the CPU, from every other key. An agent makes one call at a
// time, or a few in parallel, and seldom more than a few per second.
const (
	DefaultMaxInFlightPerKey = 8
	DefaultRatePerKey        = 50 // requests per second, with a burst of twice that
	// DefaultRefusalHold is how long a refusal of a key over its limits is
	// held back before it is sent. A client that honours Retry-After never
	// notices; one that retries at once (a loop, an attacker) is slowed to
	// one request per connection and second, instead of costing the server
	// a core in refusals.
	DefaultRefusalHold = time.Second
	// maxHeldPerKey and maxHeld bound the refusals held back for one key and
	// in all (a held refusal costs a goroutine and its connection's buffers,
	// about 16 KiB: 2,048 are 32 MiB); beyond them a refusal is sent at once
	// and its connection closed.
	maxHeldPerKey = 128
	maxHeld       = 2048
	// keyStateIdle is how long a key's state outlives its last request once
	// its bucket is full again.
	keyStateIdle = time.Minute
)

// keyLimits counts each key's requests in flight and requests per second.
// Keys idle for keyStateIdle have no entry, so its size follows the keys in use.
type keyLimits struct {
	inFlight int        // ≤0: no limit
	rate     rate.Limit // ≤0: no limit
	burst    int
	hold     time.Duration
	now      func() time.Time

	mu        sync.Mutex
	keys      map[int64]*keyState
	held      int // refusals held back, all keys
	lastSweep time.Time

	// refused counts refusals by verdict (overInFlight, overRate), for
	// the metrics.
	refused [3]atomic.Int64
}

type keyState struct {
	busy, held int
	bucket     *rate.Limiter
	seen       time.Time
}

// newKeyLimits returns nil if neither limit is set.
func newKeyLimits(inFlight int, perSecond float64, hold time.Duration) *keyLimits {
	if inFlight <= 0 && perSecond <= 0 {
		return nil
	}
	return &keyLimits{inFlight: inFlight, rate: rate.Limit(perSecond), burst: max(1, int(2*perSecond)),
		hold: hold, now: time.Now, keys: map[int64]*keyState{}}
}

// verdict is what admit decided for one request.
type verdict int

const (
	admitted verdict = iota
	overInFlight
	overRate
)

// admit counts a request of key id; stream requests count only against the
// rate (their number has its own cap in mcpserver).
func (l *keyLimits) admit(id int64, stream bool) verdict {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.sweep(now)
	st := l.keys[id]
	if st == nil {
		st = &keyState{}
		if l.rate > 0 {
			st.bucket = rate.NewLimiter(l.rate, l.burst)
		}
		l.keys[id] = st
	}
	st.seen = now
	switch {
	case !stream && l.inFlight > 0 && st.busy >= l.inFlight:
		return overInFlight
	case st.bucket != nil && !st.bucket.AllowN(now, 1):
		return overRate
	}
	if !stream {
		st.busy++
	}
	return admitted
}

// retryAfter is when key id may send again after refusal v, in whole
// seconds (at least one): for the rate, when its bucket holds a token again
// (more than a second below one request per second); for requests in
// flight nobody knows, so a second.
func (l *keyLimits) retryAfter(id int64, v verdict) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.keys[id]
	if v != overRate || st == nil || st.bucket == nil {
		return 1
	}
	missing := 1 - st.bucket.TokensAt(l.now())
	return max(1, int(math.Ceil(missing/float64(l.rate))))
}

func (l *keyLimits) done(id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st := l.keys[id]; st != nil {
		st.busy--
	}
}

// holdRefusal reports how long a refusal of key id is held back (0: not at
// all); a held one counts until unhold.
func (l *keyLimits) holdRefusal(id int64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.keys[id]
	if l.hold <= 0 || st == nil || st.held >= maxHeldPerKey || l.held >= maxHeld {
		return 0
	}
	st.held++
	l.held++
	return l.hold
}

// holdBack holds a refusal of key id back for the hold (DefaultRefusalHold)
// after giving its admission slot back, unless too many are held already;
// it reports whether it held. The request ending ends the hold early.
func (l *keyLimits) holdBack(r *http.Request, id int64) bool {
	hold := l.holdRefusal(id)
	if hold <= 0 {
		return false
	}
	freeSlot(r.Context())
	t := time.NewTimer(hold)
	select {
	case <-t.C:
	case <-r.Context().Done():
		t.Stop()
	}
	l.unhold(id)
	return true
}

func (l *keyLimits) unhold(id int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st := l.keys[id]; st != nil {
		st.held--
	}
	l.held--
}

// sweep drops the state of keys with nothing in flight or held whose bucket
// has refilled, at most once per keyStateIdle. The caller holds mu.
func (l *keyLimits) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < keyStateIdle {
		return
	}
	l.lastSweep = now
	for id, st := range l.keys {
		full := st.bucket == nil || st.bucket.TokensAt(now) >= float64(l.burst)
		if st.busy == 0 && st.held == 0 && full && now.Sub(st.seen) >= keyStateIdle {
			delete(l.keys, id)
		}
	}
}

// KeyLimits are the limits per key of one server, to be shared with a
// handler that authenticates on its own (the web UI's sessions), so that a
// key's requests count the same whichever way they come.
type KeyLimits struct{ l *keyLimits }

// NewKeyLimits makes the limits per key that cfg asks for (its
// MaxInFlightPerKey, RatePerKey and RefusalHold, defaults applied).
func NewKeyLimits(cfg Config) *KeyLimits {
	cfg = cfg.withDefaults()
	return &KeyLimits{newKeyLimits(cfg.MaxInFlightPerKey, cfg.RatePerKey, cfg.RefusalHold)}
}

// Refused is how many requests the limits refused for being over a key's
// requests in flight (inFlight true) or over its requests per second.
func (k *KeyLimits) Refused(inFlight bool) int64 {
	if k == nil || k.l == nil {
		return 0
	}
	if inFlight {
		return k.l.refused[overInFlight].Load()
	}
	return k.l.refused[overRate].Load()
}

// Limit wraps next with the limits; the key is the first key of the caller
// in the request context (service.WithCaller): a request carrying several
// keys is one request of the agent that holds them, charged once. Its refusals are the API's 429 with Retry-After.
func (k *KeyLimits) Limit(next http.Handler) http.Handler { return limitPerKey(k.l, next) }

// limitPerKey answers a key's requests beyond its limits 429 with
// Retry-After, before the body is read. It sits behind requireKey. The
// refusal gives its admission slot back and is held back DefaultRefusalHold
// (see there). A nil l: no limits.
func limitPerKey(l *keyLimits, next http.Handler) http.Handler {
	if l == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := service.CallerFrom(r.Context())
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		key := c.First()
		v := l.admit(key.ID, exempt(r))
		if v != admitted {
			l.refused[v].Add(1)
		}
		if v == admitted {
			if !exempt(r) {
				defer l.done(key.ID)
			}
			next.ServeHTTP(w, r)
			return
		}
		msg := fmt.Sprintf("key %d (%s) has %d requests in flight, the most one key may", key.ID, key.Agent, l.inFlight)
		if v == overRate {
			msg = fmt.Sprintf("key %d (%s) sends more than %g requests per second, the most one key may", key.ID, key.Agent, float64(l.rate))
		}
		retry := l.retryAfter(key.ID, v)
		msg += fmt.Sprintf("; retry after %d s", retry)
		if !l.holdBack(r, key.ID) {
			w.Header().Set("Connection", "close")
		}
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		api.WriteErrorStatus(w, http.StatusTooManyRequests, memory.CodeUnavailable, msg)
	})
}
