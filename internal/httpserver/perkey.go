package httpserver

import (
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"munin/internal/api"
	"munin/internal/limit"
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
	// and its connection closed. Refusals of requests without a key have
	// the same bounds of their own, per client address.
	maxHeldPerKey = 128
	maxHeld       = 2048
	// ProjectRateFactor: all keys of a project together send at most this
	// many times one key's requests per second (--rate-per-key), so that a
	// project that mints keys cannot multiply its CPU with them — a flood of
	// cheap requests (opening MCP sessions) costs a core at a few thousand
	// a second.
	ProjectRateFactor = 5
)

// keyLimits is the server's admission control after authentication — the
// requests in flight of each key, of each project (all its keys: a project
// that mints keys does not multiply its share) and of the server, and each
// key's requests per second — and the anonymous stage before it (see
// admitAnonymous). Every level is a limit.Keyed.
type keyLimits struct {
	hold time.Duration
	// now is the clock of every level (tests move it).
	now func() time.Time

	key     *limit.Keyed[int64]
	project *limit.Keyed[memory.ProjectRef]
	server  *limit.Keyed[struct{}]

	anonAddr *limit.Keyed[string]
	anonAll  *limit.Keyed[struct{}]

	heldKey *limit.Keyed[int64]
	heldAll *limit.Keyed[struct{}]
	// heldAddr and heldAnon count the held refusals of requests without a
	// key, apart from the keyed ones: a flood from many addresses cannot
	// use up the holds that slow down a looping key.
	heldAddr *limit.Keyed[string]
	heldAnon *limit.Keyed[struct{}]

	// refused counts refusals by verdict, for the metrics.
	refused [4]atomic.Int64
}

// newKeyLimits makes the per-key limits alone (tests); NewKeyLimits adds
// the project and server levels.
func newKeyLimits(inFlight int, perSecond float64, hold time.Duration) *keyLimits {
	return newLimits(inFlight, perSecond, hold, -1)
}

// newLimits makes every level; server ≤ 0 is no server-wide limit (and then
// none per project).
func newLimits(inFlight int, perSecond float64, hold time.Duration, server int) *keyLimits {
	l := &keyLimits{hold: hold, now: time.Now}
	clock := func() time.Time { return l.now() }
	l.key = limit.New[int64](limit.Rule{InFlight: inFlight, Rate: perSecond, Burst: max(1, int(2*perSecond))}, clock)
	if server > 0 {
		l.server = limit.New[struct{}](limit.Rule{InFlight: server}, clock)
		project := limit.Rule{InFlight: max(1, server/ProjectShare)}
		if perSecond > 0 {
			project.Rate, project.Burst = ProjectRateFactor*perSecond, int(2*ProjectRateFactor*perSecond)
		}
		l.project = limit.New[memory.ProjectRef](project, clock)
	}
	l.anonAddr = limit.New[string](limit.Rule{InFlight: anonPerAddress, Rate: anonRate, Burst: 2 * anonRate, MaxKeys: anonAddresses}, clock)
	l.anonAll = limit.New[struct{}](limit.Rule{InFlight: anonInFlight}, clock)
	l.heldKey = limit.New[int64](limit.Rule{InFlight: maxHeldPerKey}, clock)
	l.heldAddr = limit.New[string](limit.Rule{InFlight: maxHeldPerKey, MaxKeys: anonAddresses}, clock)
	l.heldAnon = limit.New[struct{}](limit.Rule{InFlight: maxHeld}, clock)
	l.heldAll = limit.New[struct{}](limit.Rule{InFlight: maxHeld}, clock)
	return l
}

// admit takes the units of one request of key: its key's (a stream only
// its rate), its project's and the server's.
func (l *keyLimits) admit(key memory.Key, stream bool) (release func(), refused *limit.Refusal) {
	if stream {
		return limit.Acquire(l.key.RateSlot(key.ID))
	}
	return limit.Acquire(l.key.Slot(key.ID), l.project.Slot(key.Project), l.server.Slot(struct{}{}))
}

// refusal is the message of a refused request.
func (l *keyLimits) refusal(key memory.Key, r *limit.Refusal) string {
	switch {
	case r.Index == 0 && r.Verdict == limit.OverRate:
		return fmt.Sprintf("key %d (%s) sends more than %g requests per second, the most one key may", key.ID, key.Agent, l.key.Rule().Rate)
	case r.Index == 0:
		return fmt.Sprintf("key %d (%s) has %d requests in flight, the most one key may", key.ID, key.Agent, l.key.Rule().InFlight)
	case r.Index == 1 && r.Verdict == limit.OverRate:
		return fmt.Sprintf("project %s sends more than %g requests per second, the most one project may (all its keys together)",
			key.ProjectLabel(), l.project.Rule().Rate)
	case r.Index == 1:
		return fmt.Sprintf("project %s has %d requests in flight, the most one project may (1/%d of the server's %d)",
			key.ProjectLabel(), l.project.Rule().InFlight, ProjectShare, l.server.Rule().InFlight)
	}
	return fmt.Sprintf("server is at its limit of %d requests in flight", l.server.Rule().InFlight)
}

// holdBack holds a refusal back for the hold (DefaultRefusalHold) after
// giving the request's slots back, unless too many are held already (for
// key id or in all); it reports whether it held. The request ending ends
// the hold early.
func (l *keyLimits) holdBack(r *http.Request, id int64) bool {
	return l.hold > 0 && l.holdWith(r, l.heldKey.Slot(id), l.heldAll.Slot(struct{}{}))
}

// holdBackAnonymous holds a refusal of a request without a key back the
// same way, counted by its client address.
func (l *keyLimits) holdBackAnonymous(r *http.Request, addr string) bool {
	return l.hold > 0 && l.holdWith(r, l.heldAddr.Slot(addr), l.heldAnon.Slot(struct{}{}))
}

// holdWith holds a refusal for the hold if own (the key's or the address's
// count of held refusals) and all (of their kind) allow it.
func (l *keyLimits) holdWith(r *http.Request, own, all limit.Slot) bool {
	release, refused := limit.Acquire(own, all)
	if refused != nil {
		return false
	}
	defer release()
	freeSlot(r.Context())
	t := time.NewTimer(l.hold)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
	return true
}

// admitInternal admits the calls of the other nodes of a cluster: they
// count against the server's requests in flight (not a key's or a
// project's: the entry node charged those) and may send bodies of any size
// the front door allows. The handler checks the cluster secret from the
// headers before it reads the body, so a call without it holds the slot
// for microseconds.
func admitInternal(l *keyLimits, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		release, refused := limit.Acquire(l.server.Slot(struct{}{}))
		if refused != nil {
			if t := ticketOf(r.Context()); t != nil {
				t.m.Rejected()
			}
			w.Header().Set("Retry-After", "1")
			api.WriteErrorStatus(w, http.StatusTooManyRequests, memory.CodeUnavailable,
				fmt.Sprintf("server is at its limit of %d requests in flight; retry after 1 second", l.server.Rule().InFlight))
			return
		}
		if t := ticketOf(r.Context()); t != nil {
			t.admitted(release)
		} else {
			defer release()
		}
		next.ServeHTTP(w, r)
	})
}

// KeyLimits are the admission limits of one server, to be shared with a
// handler that authenticates on its own (the web UI's sessions), so that a
// key's requests count the same whichever way they come.
type KeyLimits struct{ l *keyLimits }

// NewKeyLimits makes the limits that cfg asks for (its MaxInFlight,
// MaxInFlightPerKey, RatePerKey and RefusalHold, defaults applied).
func NewKeyLimits(cfg Config) *KeyLimits {
	cfg = cfg.withDefaults()
	return &KeyLimits{newLimits(cfg.MaxInFlightPerKey, cfg.RatePerKey, cfg.RefusalHold, cfg.MaxInFlight)}
}

// Refused is how many requests the limits refused for being over the
// requests in flight of a key, a project or the server (inFlight true) or
// over a key's requests per second.
func (k *KeyLimits) Refused(inFlight bool) int64 {
	if k == nil || k.l == nil {
		return 0
	}
	if inFlight {
		return k.l.refused[limit.OverInFlight].Load()
	}
	return k.l.refused[limit.OverRate].Load()
}

// Limit wraps next with the limits; the key is the first key of the caller
// in the request context (service.WithCaller): a request carrying several
// keys is one request of the agent that holds them, charged once, to that
// key's project. Its refusals are the API's 429 with Retry-After.
func (k *KeyLimits) Limit(next http.Handler) http.Handler { return limitPerKey(k.l, next) }

// limitPerKey admits a request that showed its key (it sits behind
// requireKey, or the web UI's session check): it takes the key's, the
// project's and the server's units and lifts the anonymous bounds
// (ticket.admitted), or answers 429 with Retry-After before the body is
// read. The refusal gives the request's slots back and is held back
// DefaultRefusalHold (see there). A nil l: no limits.
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
		release, refused := l.admit(key, isStream(r))
		if refused == nil {
			if t := ticketOf(r.Context()); t != nil {
				t.admitted(release)
			} else {
				defer release()
			}
			next.ServeHTTP(w, r)
			return
		}
		l.refused[refused.Verdict].Add(1)
		if t := ticketOf(r.Context()); t != nil && refused.Index == 2 {
			t.m.Rejected() // the server is full, not just this key or project
		}
		retry := seconds(refused.RetryAfter)
		msg := l.refusal(key, refused) + fmt.Sprintf("; retry after %d s", retry)
		if !l.holdBack(r, key.ID) {
			w.Header().Set("Connection", "close")
		}
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		api.WriteErrorStatus(w, http.StatusTooManyRequests, memory.CodeUnavailable, msg)
	})
}
