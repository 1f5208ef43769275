//go:build cluster

// The change feed's subscribers (issue 24): readers of GET /api/v1/changes,
// each with its own cursor and one key per project, polling through one node
// while the rounds kill owners. Each pages until a page is empty, pauses
// 100–300 ms and pages again; when its node does not answer it goes on
// with the same cursor through the next node — a cursor must work on any
// node. What they received is checked against the ledger in feed_check.go.

package clustertest

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

var clusterAbonnenten = flag.Int("cluster.abonnenten", 3, "Abonnenten des Änderungsfeeds (GET /api/v1/changes) während der Runden, jeder mit eigenem Cursor und einem Schlüssel je Projekt (gerade Nummer admin, ungerade read), reihum auf die Knoten verteilt; 0: keine")

// Feed paging: changes per page, the pause after an empty page, one call's
// bound, and at most this many keys per caller (memory's limit of keys in
// one Authorization header).
const (
	feedPage      = 200
	feedPauseMin  = 100 * time.Millisecond
	feedPauseSpan = 200 * time.Millisecond
	feedTimeout   = 5 * time.Second
	feedMaxKeys   = 16
)

// feedChange is one change as GET /api/v1/changes answers it.
type feedChange struct {
	Project  string    `json:"project"`
	Slug     string    `json:"slug"`
	Version  int       `json:"version"`
	Agent    string    `json:"agent"`
	Kind     string    `json:"kind"`
	At       time.Time `json:"at"`
	Proposal string    `json:"proposal"`
}

// subscriber is one reader of the feed.
type subscriber struct {
	name     string
	role     string // admin (sees proposals and rejections) or read
	token    string // its keys, comma-separated
	projects map[string]bool
	c        *cluster
	hc       *http.Client

	mu        sync.Mutex
	node      int    // the node it reads through now
	cursor    string // "" until the first page: from the beginning
	got       []feedChange
	pages     int
	switches  int // moves to another node after no answer
	nonOwner  int // changes delivered by a node that did not own their workspace (etcd, before the poll)
	restarts  int // async mode: an expired cursor, read again from the beginning
	outcomes  map[string]int
	firstBad  string
	nBad      int
	drained   bool // the final read reached an empty page (a stream: received every ack)
	firstNode int
	// begin is when it started reading; delays are, for each change
	// committed after that, the time from its commit (its "at", the
	// owner's clock on this machine) until it was received.
	begin  time.Time
	delays []time.Duration

	// The live stream's reader (feed_stream.go): pages counts its
	// connections; seen holds the keys of what it received.
	stream    bool
	drainTook time.Duration // from the start of the final read until it had everything
	seen      map[string]bool
	resyncs   int
	failures  int
	stop      context.CancelFunc
	done      chan struct{}
}

// subscribers makes n polling subscribers with a key per project each (at
// most feedMaxKeys projects): even ones with admin keys, odd ones with read
// keys; subscriber i starts on node i mod N. With -cluster.strom the
// stream's reader comes first.
func (c *cluster) subscribers(t *testing.T, n int) []*subscriber {
	var out []*subscriber
	if *clusterStrom {
		out = append(out, c.streamSubscriber(t))
	}
	projects := c.projects[:min(len(c.projects), feedMaxKeys)]
	p := len(projects)
	roles := []string{"admin", "read"}
	for i := range n {
		role := roles[i%2]
		name := fmt.Sprintf("abo-%d", i)
		tokens := c.keys(t, p, role, func(j int) (string, string) { return projects[j], name })
		out = append(out, newSubscriber(c, name, role, tokens, projects, i%len(c.nodes), false))
	}
	return out
}

// newSubscriber makes a reader of the feed (stream: of the live stream)
// with tokens, one per project, starting on node.
func newSubscriber(c *cluster, name, role string, tokens, projects []string, node int, stream bool) *subscriber {
	s := &subscriber{name: name, role: role, token: strings.Join(tokens, ","), projects: map[string]bool{}, c: c,
		node: node, firstNode: node, outcomes: map[string]int{}, stream: stream, seen: map[string]bool{},
		hc: &http.Client{Timeout: feedTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second}}}
	if stream { // no overall timeout: a stream is long; only its answer's head is bounded
		s.hc = &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: feedTimeout, MaxIdleConnsPerHost: 2}}
	}
	for _, pr := range projects {
		s.projects[pr] = true
	}
	return s
}

// run polls until ctx ends.
func (s *subscriber) run(ctx context.Context) {
	defer s.hc.CloseIdleConnections()
	s.started()
	for ctx.Err() == nil {
		s.poll(ctx)
		sleep(ctx, feedPauseMin+rand.N(feedPauseSpan))
	}
}

// poll reads pages until one is empty or a call fails (bounded: a page
// that is not empty holds at least one change, and the writers are
// finite). It returns whether it reached an empty page.
func (s *subscriber) poll(ctx context.Context) bool {
	owners := s.ownersNow(ctx)
	for range 10_000 {
		if ctx.Err() != nil {
			return false
		}
		n, out := s.page(ctx, owners)
		if out == outPartial {
			sleep(ctx, unavailablePause)
			return false
		}
		if out != outOK {
			s.after(ctx, out)
			return false
		}
		if n == 0 {
			return true
		}
	}
	return false
}

// after pauses after a failed call: when the node did not answer (gone or
// paused) the subscriber goes on with the same cursor through the next one.
func (s *subscriber) after(ctx context.Context, out string) {
	if out != outConnection {
		sleep(ctx, unavailablePause)
		return
	}
	s.mu.Lock()
	s.node = (s.node + 1) % len(s.c.nodes)
	s.switches++
	s.mu.Unlock()
	sleep(ctx, reconnectMin)
}

// cutOff reports whether reading an answer failed because the connection
// ended (unexpected EOF, reset), not because the answer was no JSON.
func cutOff(err error) bool {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return err != nil && !errors.As(err, &syntax) && !errors.As(err, &typ)
}

// ownersNow maps workspace → owner's advertise URL as etcd says now (nil
// when etcd does not answer).
func (s *subscriber) ownersNow(ctx context.Context) map[string]string {
	if s.c.cli == nil { // a single server in the package's own tests
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	owners, err := readOwners(ctx, s.c.cli)
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for ws, o := range owners {
		out[ws] = o.advertise
	}
	return out
}

// page reads one page from the cursor through the current node and keeps
// what it got; it returns the number of changes and the outcome.
func (s *subscriber) page(ctx context.Context, owners map[string]string) (int, string) {
	s.mu.Lock()
	via, cursor := s.node, s.cursor
	s.mu.Unlock()
	base := s.c.nodes[via].advertise()
	q := url.Values{"limit": {fmt.Sprint(feedPage)}}
	if cursor != "" {
		q.Set("since", cursor)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/changes?"+q.Encode(), nil)
	if err != nil {
		s.count(outOther, err.Error())
		return 0, outOther
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := s.hc.Do(req)
	if ctx.Err() != nil {
		if err == nil {
			resp.Body.Close()
		}
		return 0, outConnection // stopped mid-call: not counted
	}
	if err != nil {
		s.count(outConnection, "")
		return 0, outConnection
	}
	defer resp.Body.Close()
	var body struct {
		Changes    []feedChange `json:"changes"`
		NextCursor string       `json:"next_cursor"`
		// Unavailable names projects whose workspace could not be read
		// (a failover): the page is partial, their position kept.
		Unavailable []json.RawMessage `json:"unavailable"`
		Error       struct{ Code, Message string }
	}
	derr := json.NewDecoder(resp.Body).Decode(&body)
	switch {
	case resp.StatusCode == http.StatusOK && derr == nil && body.NextCursor != "":
	case cutOff(derr): // the node died while it sent the answer
		s.count(outConnection, "")
		return 0, outConnection
	case resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusBadGateway:
		s.count(outUnavailable, "")
		return 0, outUnavailable
	case resp.StatusCode == http.StatusBadRequest && *clusterModus == "async" && strings.Contains(body.Error.Message, "expired"):
		// Async replication may lose acknowledged writes in a failover,
		// and a cursor that read them is expired (docs/changes.md): a
		// fresh reader from the beginning.
		s.expired()
		return 0, outUnavailable
	default:
		s.count(outOther, fmt.Sprintf("%s: GET /api/v1/changes über n%d: %d %s: %s (%v)", s.name, via, resp.StatusCode, body.Error.Code, body.Error.Message, derr))
		return 0, outOther
	}
	out := outOK
	if len(body.Unavailable) > 0 {
		out = outPartial // not drained yet, even when empty: read again
	}
	s.count(out, "")
	here := 0
	for _, ch := range body.Changes {
		if o := owners[workspaceOf(ch.Project)]; o != "" && o != base {
			here++
		}
	}
	s.mu.Lock()
	s.received(body.Changes...)
	s.cursor = body.NextCursor
	s.pages++
	s.nonOwner += here
	s.mu.Unlock()
	return len(body.Changes), out
}

// started marks the start of reading.
func (s *subscriber) started() {
	s.mu.Lock()
	s.begin = time.Now()
	s.mu.Unlock()
}

// received keeps changes and their delays; s.mu is held.
func (s *subscriber) received(chs ...feedChange) {
	now := time.Now()
	for _, ch := range chs {
		s.got = append(s.got, ch)
		if s.seen != nil {
			s.seen[changeKey(ch)] = true
		}
		if ch.At.After(s.begin) {
			s.delays = append(s.delays, now.Sub(ch.At))
		}
	}
}

// expired starts a fresh read from the beginning after an expired cursor
// (async mode only): the old reads are dropped.
func (s *subscriber) expired() {
	s.mu.Lock()
	s.cursor, s.got, s.seen = "", nil, map[string]bool{}
	s.restarts++
	s.mu.Unlock()
	s.count("abgelaufen", "")
}

// drain reads on after the writers stopped until a page is empty (every
// acknowledged write is in the feed by then), through whichever node
// answers, until ctx ends.
func (s *subscriber) drain(ctx context.Context) {
	for ctx.Err() == nil {
		if s.poll(ctx) {
			s.mu.Lock()
			s.drained = true
			s.mu.Unlock()
			return
		}
		sleep(ctx, feedPauseMin)
	}
}

// count counts a call's outcome; a non-empty unexpected is an unexpected
// answer, the first of which the report shows.
func (s *subscriber) count(out, unexpected string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outcomes[out]++
	if unexpected == "" {
		return
	}
	s.nBad++
	if s.firstBad == "" {
		s.firstBad = unexpected
	}
}
