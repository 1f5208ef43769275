package mcpserver

// Resource subscriptions: a 2025 session's resources/subscribe
// (2025-06-18, 2025-11-25; notifications on its GET stream), a 2026-07-28
// subscriptions/listen stream's resourceSubscriptions and
// resourcesListChanged, and both over stdio. mcp-go v1.2.1 acknowledges
// them but keeps no record of them (no session type of it tracks
// subscriptions), so the registry here does, fed by mcp-go's hooks
// (subscribe_hooks.go).
//
// A subscriber (one 2025 session, one listen stream, the stdio session)
// holds its subscribed URIs, at most MaxSubscriptionsPerSession, and for
// each project it may read that one of them names one service.Watch: the
// change feed's fan-out, one feed read per workspace per commit batch for
// every watcher (internal/changehub). A URI of a project the caller holds
// no key for, or of another scheme, is accepted and never fires: the same
// answer as for a project that does not exist, invariant 7
// (docs/architecture.md#invariant-7-a-caller-reaches-only-its-projects).
//
// A subscriber gets at most one round of notifications per subscribePace:
// changes within it are coalesced, each URI once (an update says "read it
// again", so one tells of all). Delivery never blocks the hub's goroutine:
// each notification is a non-blocking send into mcp-go's 100-slot channel of the session or
// stream. What finds the channel full (a client that stopped reading, a
// 2025 session with no stream open), and everything of a project when the
// hub says changes may have been missed (WatchEvent.Resync), is owed: a
// set of the subscriber's own URIs plus one list_changed flag, not a
// queue, so a stuck subscriber holds at most MaxSubscriptionsPerSession
// owed URIs however much is written. The maintenance loop (every
// subscribeRetry) sends what is owed once the channel has room — the
// resync marker: notifications/resources/updated for each owed URI, then
// list_changed if the subscriber asked for it. It tells the client:
// re-read these resources, or the change feed from your cursor.

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"munin/internal/memory"
	"munin/internal/service"
)

// MaxSubscriptionsPerSession bounds the resource URIs one 2025 session, one
// listen stream or the stdio session subscribes to at once. A 2025
// subscription past it drops the session's oldest one (mcp-go's hooks
// cannot refuse a resources/subscribe, and a client that subscribes as it
// browses keeps working); a listen stream honours the first this many
// distinct URIs of its request and its acknowledgement lists only those.
const MaxSubscriptionsPerSession = 256

const (
	// subscribeRetry is how often the maintenance loop sends pending resync
	// markers and marks new listen streams ready.
	subscribeRetry = time.Second
	// subscribeKeyCheck is how often a subscriber's keys are looked up
	// again (service.KeyByID): a revoked key stops its subscriptions.
	subscribeKeyCheck = 5 * time.Second
	// subscribeKeyStale: a subscriber whose keys were last checked longer
	// ago (the loop fell behind) gets nothing until they are checked again;
	// what it missed comes as the resync marker.
	subscribeKeyStale = 3 * subscribeKeyCheck
	// subscribePace is the least time between two rounds of notifications
	// to one subscriber. The first change after a quiet spell goes out at
	// once; what comes within the pace gathers, each URI once, and goes
	// out when it has passed. A subscriber of a busy project so hears of a
	// write within the pace plus delivery, in at most one round per pace,
	// however often the project is written.
	subscribePace = 50 * time.Millisecond
)

// watched is one project a subscriber watches.
type watched struct {
	stop    func() // nil while service.Watch runs, or if it failed
	project bool   // the project's own URI is subscribed
	slugs   map[string]struct{}
	// all: watched for list_changed whatever the URIs (a listen stream
	// that asked for resourcesListChanged hears of every project it holds).
	all bool
}

func (w *watched) empty() bool { return !w.project && len(w.slugs) == 0 && !w.all }

// subscriber is one 2025 session, listen stream or stdio session with its
// subscriptions. Its mutable fields are guarded by subscriptions.mu.
type subscriber struct {
	key    string // its key in the registry
	caller memory.Caller
	// sessionID, for a 2025 HTTP session: mcp-go's
	// SendNotificationToSpecificClient finds its channel.
	sessionID string
	// ch, for a listen stream or stdio: the session's notification channel.
	ch chan<- mcp.JSONRPCNotification
	// tag, if not nil, goes into each notification's
	// _meta["io.modelcontextprotocol/subscriptionId"]: a listen over stdio,
	// whose session (unlike the HTTP listen's) does not tag.
	tag         any
	listChanged bool

	uris     map[string]uint64 // subscribed URI → its order, to drop the oldest
	seq      uint64
	projects map[memory.ProjectRef]*watched
	// pend is what is due but was not delivered: the URIs whose
	// notifications/resources/updated is owed, and pendList for a
	// list_changed. It holds subscribed URIs only, so a subscriber that
	// stopped reading holds at most MaxSubscriptionsPerSession of them
	// however much is written; it is the resync marker, sent by the
	// maintenance loop once the channel has room.
	pend     map[string]struct{}
	pendList bool
	checked  time.Time // last time its keys were found valid
	// lastSent is when its last round of notifications went out; dueAt,
	// if not zero, when the pacer sends what gathered since (subscribePace).
	lastSent, dueAt time.Time
	// ready: deliveries may go out. A listen stream is not ready until the
	// maintenance loop saw it once: mcp-go sends the acknowledgement after
	// the hook that registered it, and nothing may come before it; what
	// happens meanwhile comes as the resync marker.
	ready bool
	ticks int // maintenance rounds seen while not ready
	// overflows counts notifications that found the channel full.
	overflows atomic.Int64
	gone      bool
}

// subscriptions is the registry of every subscriber of one Server.
type subscriptions struct {
	svc *service.Service
	mcp *server.MCPServer
	log *slog.Logger
	now func() time.Time
	// every is the maintenance loop's period (subscribeRetry; tests
	// shorten it).
	every time.Duration

	// live reports whether a 2025 session id is live (sessionIDs.isLive).
	live func(id string) bool

	mu      sync.Mutex
	subs    map[string]*subscriber
	running bool // the maintenance loop runs (while subs is not empty)

	pace time.Duration // subscribePace
	// paced are the subscribers with a round due (dueAt); the pacer
	// goroutine runs while there are any and sleeps until the first is due
	// or wake says a new one came.
	paced        map[*subscriber]struct{}
	pacerRunning bool
	wake         chan struct{}

	// Counters for tests and metrics.
	sent, overflowed, coalesced, resyncs, revoked atomic.Int64
	listens                                       atomic.Uint64 // numbers the listen subscribers
}

func newSubscriptions(svc *service.Service, log *slog.Logger) *subscriptions {
	return &subscriptions{svc: svc, log: log, now: time.Now, every: subscribeRetry, pace: subscribePace,
		paced: map[*subscriber]struct{}{}, wake: make(chan struct{}, 1), subs: map[string]*subscriber{}}
}

// size is the number of subscribers and of URIs they hold.
func (r *subscriptions) size() (subs, uris int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.subs {
		uris += len(s.uris)
	}
	return len(r.subs), uris
}

// addLocked records a new subscriber and starts the maintenance loop if it
// is not running.
func (r *subscriptions) addLocked(s *subscriber) {
	s.uris = map[string]uint64{}
	s.projects = map[memory.ProjectRef]*watched{}
	s.pend = map[string]struct{}{}
	s.checked = r.now()
	r.subs[s.key] = s
	if !r.running {
		r.running = true
		go r.maintain()
	}
}

// subscribe adds uri to the subscriber under key, made by mk if there is
// none. Past MaxSubscriptionsPerSession the oldest URI is dropped.
func (r *subscriptions) subscribe(key string, mk func() *subscriber, uri string) {
	r.mu.Lock()
	s := r.subs[key]
	if s == nil {
		s = mk()
		r.addLocked(s)
	}
	var stops []func()
	if _, ok := s.uris[uri]; !ok && len(s.uris) >= MaxSubscriptionsPerSession {
		oldest, first := "", uint64(0)
		for u, n := range s.uris { // at most MaxSubscriptionsPerSession
			if oldest == "" || n < first {
				oldest, first = u, n
			}
		}
		stops = append(stops, r.removeURILocked(s, oldest)...)
	}
	s.seq++
	s.uris[uri] = s.seq
	start := r.addURILocked(s, uri)
	r.mu.Unlock()
	runAll(stops)
	r.startWatches(s, start)
}

// unsubscribe removes uri from the subscriber under key; one left with no
// URI is dropped (a listen stream lives until its request ends).
func (r *subscriptions) unsubscribe(key, uri string, dropEmpty bool) {
	r.mu.Lock()
	s := r.subs[key]
	if s == nil {
		r.mu.Unlock()
		return
	}
	stops := r.removeURILocked(s, uri)
	if dropEmpty && len(s.uris) == 0 {
		stops = append(stops, r.dropLocked(s)...)
	}
	r.mu.Unlock()
	runAll(stops)
}

// drop ends the subscriber under key and stops its watches.
func (r *subscriptions) drop(key string) {
	r.mu.Lock()
	var stops []func()
	if s := r.subs[key]; s != nil {
		stops = r.dropLocked(s)
	}
	r.mu.Unlock()
	runAll(stops)
}

// dropLocked forgets s and returns the stops of its watches, to be called
// once mu is released: a stop waits for the hub's goroutine, which may be
// waiting for mu in deliver.
func (r *subscriptions) dropLocked(s *subscriber) []func() {
	delete(r.subs, s.key)
	s.gone = true
	var stops []func()
	for ref, w := range s.projects {
		if w.stop != nil {
			stops = append(stops, w.stop)
		}
		delete(s.projects, ref)
	}
	s.uris, s.pend = nil, nil
	delete(r.paced, s)
	return stops
}

// newWatch is a project whose watch is to be started (startWatches).
type newWatch struct {
	ref memory.ProjectRef
	w   *watched
}

// addURILocked notes uri in its project's watch; it returns the project if
// a watch must be started for it. A URI that is not munin's, malformed, or
// of a project the caller holds no key for changes nothing else: it is
// inert.
func (r *subscriptions) addURILocked(s *subscriber, uri string) []newWatch {
	ref, slug, err := parseResourceURI(uri)
	if err != nil {
		return nil
	}
	if _, ok := s.caller.KeyFor(ref); !ok {
		return nil
	}
	w, isNew := s.projects[ref], false
	if w == nil {
		w, isNew = &watched{slugs: map[string]struct{}{}}, true
		s.projects[ref] = w
	}
	if slug == "" {
		w.project = true
	} else {
		w.slugs[slug] = struct{}{}
	}
	if isNew {
		return []newWatch{{ref, w}}
	}
	return nil
}

// removeURILocked takes uri away from s and returns the stop of its
// project's watch if nothing else needs it.
func (r *subscriptions) removeURILocked(s *subscriber, uri string) []func() {
	if _, ok := s.uris[uri]; !ok {
		return nil
	}
	delete(s.uris, uri)
	delete(s.pend, uri)
	ref, slug, err := parseResourceURI(uri)
	if err != nil {
		return nil
	}
	w := s.projects[ref]
	if w == nil {
		return nil
	}
	if slug == "" {
		w.project = false
	} else {
		delete(w.slugs, slug)
	}
	if !w.empty() {
		return nil
	}
	delete(s.projects, ref)
	if w.stop != nil {
		return []func(){w.stop}
	}
	return nil // a watch still starting sees it was removed and stops itself
}

// startWatches calls service.Watch for each project (outside mu: Watch
// waits for the hub). A watch whose project was dropped meanwhile is
// stopped at once; one refused (a key revoked since) stays inert.
func (r *subscriptions) startWatches(s *subscriber, news []newWatch) {
	for _, nw := range news {
		ref, w := nw.ref, nw.w
		stop, err := r.svc.Watch(s.caller, ref, func(ev service.WatchEvent) { r.deliver(s, ref, w, ev) })
		if err != nil {
			r.log.Debug("mcp subscription: watch refused", "project", ref.String(), "err", err)
			continue
		}
		r.mu.Lock()
		live := !s.gone && s.projects[ref] == w
		if live {
			w.stop = stop
		}
		r.mu.Unlock()
		if !live {
			stop()
		}
	}
}

func runAll(fs []func()) {
	for _, f := range fs {
		f()
	}
}

// SubscriptionStats is what the resource subscriptions hold and did since
// the start, for the metrics and the load test.
type SubscriptionStats struct {
	// Subscribers are the 2025 sessions, listen streams and stdio sessions
	// with subscriptions now; URIs the resource URIs they hold.
	Subscribers, URIs int
	// Sent counts notifications handed to a session's or stream's channel;
	// Overflowed those that found it full (then owed: the resync marker);
	// Coalesced changes told in a notification already due (the pace).
	Sent, Overflowed, Coalesced int64
	// Resyncs counts resync markers sent in full; Revoked subscribers
	// dropped because a key of theirs was revoked.
	Resyncs, Revoked int64
}

// SubscriptionStats reports the resource subscriptions' counters.
func (s *Server) SubscriptionStats() SubscriptionStats {
	subs, uris := s.subs.size()
	return SubscriptionStats{Subscribers: subs, URIs: uris,
		Sent: s.subs.sent.Load(), Overflowed: s.subs.overflowed.Load(), Coalesced: s.subs.coalesced.Load(),
		Resyncs: s.subs.resyncs.Load(), Revoked: s.subs.revoked.Load()}
}
