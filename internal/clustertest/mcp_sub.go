//go:build cluster

// The MCP subscribers (issue 24, the cluster bound: "a subscriber connected
// to one node hears about writes whose workspace another node owns, and
// after a failover it resumes without losing a change"). Each is a
// 2025-11-25 session, spoken over plain HTTP — initialize,
// notifications/initialized, the session's GET stream, then
// resources/subscribe of the project URI (munin://ws/project) of every
// project whose workspace its node did not own when it started — that
// notes when each notifications/resources/updated arrives. It is written by
// hand rather than with mcp-go's client because the check must know when
// the GET stream was open and when it broke, and must stamp each
// notification as it is read.
//
// When its stream ends (its node was killed, or paused and ended itself)
// or a call answers 404 (the node does not know the session), it opens a
// new session on another node — the first after it that owns none of its
// workspaces, if there is one — and subscribes again. Each session is a
// window; between two windows lies a gap, which the check excuses
// (mcp_sub_check.go).

package clustertest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// mcpProtocol is the subscribers' protocol version: the one with sessions
// and resources/subscribe.
const mcpProtocol = "2025-11-25"

// Methods of the notifications a subscriber receives.
const (
	methodUpdated     = "notifications/resources/updated"
	methodListChanged = "notifications/resources/list_changed"
)

// Why a window ended.
const (
	endStream = "abbruch" // the GET stream broke or ended
	endGone   = "404"     // the node did not know the session
	endStop   = "ende"    // the test stopped the subscriber
	endPaused = "angehalten"
)

// mcpWindow is one session of a subscriber: per project, from the answer
// to its resources/subscribe until the session's stream ended.
type mcpWindow struct {
	node  int
	start map[string]time.Time // project → when its subscription was acknowledged
	end   time.Time            // zero while the session is open
	cause string               // why it ended (end*)
}

// mcpNote is one notifications/resources/updated a subscriber received.
type mcpNote struct {
	project string // the project its URI names; "" for a URI not subscribed
	at      time.Time
	window  int
	via     nodeRole // whether the session's node owned the project's workspace (etcd, read at most once a second)
}

// nodeRole is what a notification's node was to its workspace.
type nodeRole int8

const (
	viaUnknown nodeRole = iota // etcd did not say
	viaOther                   // another node owned the workspace
	viaOwner                   // the node owned it
)

// mcpSubscriber is one subscribing MCP client.
type mcpSubscriber struct {
	name     string
	token    string   // a read key per project, comma-separated
	projects []string // workspace/project, each subscribed by its project URI
	c        *cluster
	hc       *http.Client
	// feed reads the change feed with the same keys after the writers
	// stopped: the changes the notifications are checked against.
	feed *subscriber
	stop context.CancelFunc
	done chan struct{}

	mu          sync.Mutex
	node        int
	firstNode   int
	windows     []mcpWindow
	notes       []mcpNote
	listChanged int
	outcomes    map[string]int
	nBad        int
	firstBad    string
}

// mcpSubscribers makes n subscribers with a read key per project each.
// Subscriber i starts on node (i+1) mod N and subscribes to the projects
// whose workspace that node does not own now (all of them if etcd does not
// answer or the node owns every one).
func (c *cluster) mcpSubscribers(t *testing.T, n int) []*mcpSubscriber {
	var out []*mcpSubscriber
	for i := range n {
		node := (i + 1) % len(c.nodes)
		name := fmt.Sprintf("mcp-%d", i)
		owners := (&subscriber{c: c}).ownersNow(context.Background())
		var projects []string
		for _, p := range c.projects {
			if owners[workspaceOf(p)] != c.nodes[node].advertise() {
				projects = append(projects, p)
			}
		}
		if len(projects) == 0 {
			projects = c.projects
		}
		projects = projects[:min(len(projects), feedMaxKeys)]
		var owned []string
		for _, p := range projects {
			owned = append(owned, p+"@"+c.nodeName(owners[workspaceOf(p)]))
		}
		t.Logf("MCP-Abonnent %s: Start über n%d, abonniert (Projekt@Eigentümer) %v", name, node, owned)
		tokens := c.keys(t, len(projects), "read", func(j int) (string, string) { return projects[j], name })
		out = append(out, newMCPSubscriber(c, name, tokens, projects, node))
	}
	return out
}

func newMCPSubscriber(c *cluster, name string, tokens, projects []string, node int) *mcpSubscriber {
	return &mcpSubscriber{name: name, token: strings.Join(tokens, ","), projects: projects, c: c, node: node, firstNode: node,
		outcomes: map[string]int{},
		feed:     newSubscriber(c, name+"/feed", "read", tokens, projects, node, false),
		// No overall timeout: the GET stream is long; answers' heads are bounded.
		hc: &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: feedTimeout, MaxIdleConnsPerHost: 2}}}
}

// startMCPSubscribers runs each subscriber on its own context, past the
// writers, until verifyMCPSubscribers (or the test's end) stops it.
func startMCPSubscribers(t *testing.T, subs []*mcpSubscriber) {
	for _, m := range subs {
		ctx, stop := context.WithCancel(context.Background())
		m.stop, m.done = stop, make(chan struct{})
		go func() { defer close(m.done); m.run(ctx) }()
		t.Cleanup(func() { stop(); <-m.done })
	}
}

// run holds a session, and a new one on the next node whenever one ends,
// until ctx ends.
func (m *mcpSubscriber) run(ctx context.Context) {
	defer m.hc.CloseIdleConnections()
	pause := reconnectMin
	for ctx.Err() == nil {
		if m.session(ctx) {
			pause = reconnectMin
		} else {
			sleep(ctx, pause)
			pause = min(2*pause, reconnectMax)
		}
		next := m.nextNode(ctx)
		m.mu.Lock()
		m.node = next
		m.mu.Unlock()
	}
}

// nextNode is the node for the next session: after the current one, the
// first that owns none of the subscribed workspaces now (etcd), else the
// next one.
func (m *mcpSubscriber) nextNode(ctx context.Context) int {
	m.mu.Lock()
	cur := m.node
	m.mu.Unlock()
	n := len(m.c.nodes)
	owners := m.feed.ownersNow(ctx)
	for k := 1; k < n && owners != nil; k++ {
		cand := (cur + k) % n
		owns := false
		for _, p := range m.projects {
			owns = owns || owners[workspaceOf(p)] == m.c.nodes[cand].advertise()
		}
		if !owns {
			return cand
		}
	}
	return (cur + 1) % n
}

// mcpConn is one session's HTTP side.
type mcpConn struct {
	url, id string
	next    int
	window  int // the session's window, once its stream is open
}

// session opens a session through the current node, opens its GET stream,
// subscribes, and reads the stream until it ends; false if it did not get
// as far as the stream.
func (m *mcpSubscriber) session(ctx context.Context) bool {
	m.mu.Lock()
	via := m.node
	m.mu.Unlock()
	conn := &mcpConn{url: m.c.nodes[via].mcpURL(), window: -1}
	defer m.closeSession(conn)
	init := map[string]any{"protocolVersion": mcpProtocol, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": m.name, "version": "1"}}
	if _, out := m.call(ctx, conn, "initialize", init, false); out != outOK {
		return false
	}
	if conn.id == "" {
		m.count(outOther, fmt.Sprintf("%s: initialize über n%d ohne Mcp-Session-Id", m.name, via))
		return false
	}
	if _, out := m.call(ctx, conn, "notifications/initialized", nil, true); out != outOK {
		return false
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	body, out := m.openStream(sctx, conn)
	if out != outOK {
		return false
	}
	m.mu.Lock()
	conn.window = len(m.windows)
	m.windows = append(m.windows, mcpWindow{node: via, start: map[string]time.Time{}})
	m.mu.Unlock()
	ended := make(chan string, 1)
	go func() { ended <- m.readStream(ctx, body, conn.window, via) }()
	cause := ""
	for _, p := range m.projects {
		_, out := m.call(sctx, conn, "resources/subscribe", map[string]any{"uri": resourceURI(p)}, false)
		if out != outOK {
			cause = endStream
			if out == outSession {
				cause = endGone
			}
			break
		}
		m.mu.Lock()
		m.windows[conn.window].start[p] = time.Now()
		m.mu.Unlock()
	}
	if cause == "" {
		select {
		case cause = <-ended:
		case <-ctx.Done():
		}
	}
	if ctx.Err() != nil {
		cause = endStop
	}
	m.mu.Lock()
	m.windows[conn.window].end, m.windows[conn.window].cause = time.Now(), cause
	m.mu.Unlock()
	cancel()
	body.Close()
	return true
}

// count counts a call's outcome; a non-empty unexpected is a finding.
func (m *mcpSubscriber) count(out, unexpected string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.outcomes[out]++
	if unexpected == "" {
		return
	}
	m.nBad++
	if m.firstBad == "" {
		m.firstBad = unexpected
	}
}
