// Package changestream serves the change feed as a live stream of
// server-sent events (text/event-stream): the REST API's
// GET /api/v1/changes/stream and the web UI's project pages share it, so
// both resume, bound and end a stream the same way.
//
// A stream holds no queue of its own. It reads the feed from its cursor one
// bounded page at a time, writes the page, and waits for the next write (the
// service's change signal), a poll tick (writes whose workspace another node
// owns do not fire the local signal), a heartbeat tick, the client leaving
// or the server shutting down; with every heartbeat it checks that the
// caller's keys are still valid, so a revoked key's stream ends within a
// heartbeat. A slow client therefore costs one page of
// memory at most, and it only ever delays itself: every write to it has a
// deadline, and a client that does not read within it is cut off. The id of
// every event is the cursor after its change (the feed gives it with the
// page: one read per page, however many changes it holds), so a client that
// reconnects with Last-Event-ID gets exactly the changes it missed. A
// workspace the feed cannot read for a while (a cluster's failover) does
// not end a stream: it goes on with the caller's other workspaces, says
// which projects it misses in an unavailable event, and reads again after
// Options.Retry; its cursors keep the missed workspace's position.
package changestream

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"munin/internal/memory"
)

// Defaults of Options.
const (
	// DefaultHeartbeat is how often an idle stream sends a comment line, so
	// that proxies and load balancers that close idle connections (often
	// after 30 or 60 s) keep it open.
	DefaultHeartbeat = 15 * time.Second
	// DefaultPoll is how often a stream reads the feed without a signal: in
	// a cluster, writes to a workspace another node owns reach this node
	// only through the feed.
	DefaultPoll = time.Second
	// DefaultWriteTimeout is how long one page may take to reach the
	// client's socket before the client counts as stuck and is cut off.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultRetry is how soon a stream reads the feed again after a page
	// that could not read some of its workspaces (Result.Unavailable; a
	// cluster's failover lasts a few seconds), signal or not.
	DefaultRetry = time.Second
	// DefaultPageSize is how many changes a stream reads (and holds) at once.
	DefaultPageSize = 100
	// DefaultMaxReads bounds the feed reads of all streams at once. A write
	// wakes every stream of its workspace, and a thousand reads at once
	// would take the read pool and the cores from the writers (whose index
	// refresh reads too): the streams queue among themselves instead.
	DefaultMaxReads = 2
	// DefaultMaxPerKey bounds the open change streams of one key, the same
	// bound as MCP's GET streams (mcpserver.DefaultMaxStreamsPerKey, the
	// server's --max-streams-per-key).
	DefaultMaxPerKey = 8
	// ProjectKeys: all keys of one project together hold at most this many
	// times one key's streams, as for MCP's GET streams
	// (mcpserver.ProjectStreamKeys): minting keys does not multiply them.
	ProjectKeys = 4
)

// Options configure the streams; a zero field takes its default.
type Options struct {
	Heartbeat time.Duration
	// Poll is how often a stream reads the feed without a signal; negative:
	// never (a single server, where every write fires the signal).
	Poll         time.Duration
	WriteTimeout time.Duration
	// Retry is how soon a stream reads again after a page with unavailable
	// workspaces.
	Retry    time.Duration
	PageSize int
	// MaxPerKey bounds the open streams of one key (and ProjectKeys times
	// it those of one project); the excess is refused (*RefusedError).
	MaxPerKey int
	// MaxReads bounds the feed reads of all streams at once.
	MaxReads int
}

func (o Options) withDefaults() Options {
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.Poll == 0 {
		o.Poll = DefaultPoll
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.Retry <= 0 {
		o.Retry = DefaultRetry
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	if o.MaxPerKey <= 0 {
		o.MaxPerKey = DefaultMaxPerKey
	}
	if o.MaxReads <= 0 {
		o.MaxReads = DefaultMaxReads
	}
	return o
}

// Streams serves change streams over one feed. One value is shared by every
// transport that serves them, so that a key's streams are counted together.
type Streams struct {
	feed   Feed
	opts   Options
	limits *limits

	reads     chan struct{} // a token per feed read in flight (MaxReads)
	closing   chan struct{}
	closeOnce sync.Once
	open      atomic.Int64
	queued    atomic.Int64
}

// New returns the streams of feed.
func New(feed Feed, opts Options) *Streams {
	opts = opts.withDefaults()
	return &Streams{feed: feed, opts: opts, limits: newLimits(opts.MaxPerKey),
		reads: make(chan struct{}, opts.MaxReads), closing: make(chan struct{})}
}

// changes reads the feed within MaxReads.
func (s *Streams) changes(ctx context.Context, c memory.Caller, req Request) (Result, error) {
	s.queued.Add(1)
	select {
	case s.reads <- struct{}{}:
		s.queued.Add(-1)
	case <-ctx.Done():
		s.queued.Add(-1)
		return Result{}, ctx.Err()
	}
	defer func() { <-s.reads }()
	return s.feed.Changes(ctx, c, req)
}

// Queued is the number of feed reads waiting for their turn (MaxReads).
func (s *Streams) Queued() int64 { return s.queued.Load() }

// Open is the number of streams being served now.
func (s *Streams) Open() int64 { return s.open.Load() }

// Close ends every open stream (each with a resync event) and refuses new
// ones; the HTTP server's shutdown does the same for the streams it serves.
func (s *Streams) Close() { s.closeOnce.Do(func() { close(s.closing) }) }

// StartCursor is where a request asks its stream to start: the
// Last-Event-ID header (an EventSource that reconnects sends the id of the
// last event it received, so it takes precedence over the URL it was opened
// with), else the since query parameter as GET /changes reads it (empty:
// from the beginning), else "now".
func StartCursor(r *http.Request) string {
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		return id
	}
	if q := r.URL.Query(); q.Has("since") {
		return q.Get("since")
	}
	return "now"
}

// RefusedError refuses a stream over its key's or project's limit; the
// transports answer it with 429 and Retry-After.
type RefusedError struct {
	Message    string
	RetryAfter time.Duration
}

func (e *RefusedError) Error() string { return e.Message }

// Serve streams the changes c may read, from the request's StartCursor, to
// w until the client leaves, r's context ends (the server shuts down), the
// client stops reading or the feed fails. An error is returned only when
// nothing has been written yet — a *RefusedError over the limits, or the
// feed's (an invalid cursor is memory.CodeInvalid) — for the transport to
// answer in its own way; once the stream has started, it ends with an
// event instead (resync or failure).
func (s *Streams) Serve(w http.ResponseWriter, r *http.Request, c memory.Caller) error {
	select {
	case <-s.closing:
		return memory.Errorf(memory.CodeUnavailable, "the server is shutting down; reconnect to resume")
	default:
	}
	release, err := s.limits.acquire(c)
	if err != nil {
		return err
	}
	defer release()
	s.open.Add(1)
	defer s.open.Add(-1)

	st := &stream{s: s, w: w, rc: http.NewResponseController(w), c: c, cursor: StartCursor(r)}
	ctx := r.Context()
	// Subscribe before the first read, so that no write between the read
	// and the subscription goes unnoticed.
	wake, stop := s.feed.ChangeSignal(c)
	defer func() { stop() }()
	page, err := st.read(ctx)
	if err != nil {
		return err
	}
	if err := st.start(); err != nil {
		return nil // the client is gone before the first byte
	}
	heartbeat := time.NewTicker(s.opts.Heartbeat)
	defer heartbeat.Stop()
	var poll <-chan time.Time // nil: never
	if s.opts.Poll > 0 {
		t := time.NewTicker(s.opts.Poll)
		defer t.Stop()
		poll = t.C
	}
	// retry fires after a page that left out an unavailable workspace: its
	// owner may be back before any signal (a single server does not poll).
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	for {
		// Catch up: page after page while pages come back full, one page
		// in memory at a time.
		for page != nil {
			if err := st.noteUnavailable(page); err != nil {
				st.end(ctx, err)
				return nil
			}
			if len(page.Unavailable) > 0 {
				retry.Reset(s.opts.Retry)
			}
			if err := st.send(page); err != nil {
				st.end(ctx, err)
				return nil
			}
			if len(page.Changes) < s.opts.PageSize {
				page = nil
				break
			}
			if page, err = st.read(ctx); err != nil {
				st.end(ctx, err)
				return nil
			}
		}
		select {
		case _, ok := <-wake:
			if !ok {
				// A signal that closes is good for one write: take a new
				// one before reading, as at the start.
				stop()
				wake, stop = s.feed.ChangeSignal(c)
			}
		case <-poll:
		case <-retry.C:
		case <-heartbeat.C:
			if err := st.keysValid(ctx); err != nil {
				st.end(ctx, err)
				return nil
			}
			if err := st.write([]byte(": ping\n\n")); err != nil {
				st.end(ctx, err)
				return nil
			}
			continue
		case <-ctx.Done():
			st.end(ctx, errShutdown)
			return nil
		case <-s.closing:
			st.end(ctx, errShutdown)
			return nil
		}
		if page, err = st.read(ctx); err != nil {
			st.end(ctx, err)
			return nil
		}
	}
}

// errShutdown ends a stream whose request ended: the server shuts down (or
// the client left, and then nothing reaches it anyway).
var errShutdown = errors.New("stream ends")

// ctxDone reports whether err is the end of ctx rather than a failure.
func ctxDone(ctx context.Context, err error) bool {
	return ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}
