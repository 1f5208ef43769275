//go:build cluster

// The agents: MCP clients over Streamable HTTP, each bound to one node and
// one project, remembering into slugs only it writes. They behave as a real
// client does across a failover: an `unavailable` answer is retried after a
// short pause; a broken connection is retried, after a growing pause, with
// the same session, so that a node that came back without it answers 404;
// a lost session (404) is answered by a new session on the same node.
// Every acknowledged version goes into the ledger.

package clustertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Pauses between attempts: after `unavailable`, and the bounds of the
// doubling pause before a new session on a node that does not answer.
const (
	unavailablePause = 20 * time.Millisecond
	reconnectMin     = 25 * time.Millisecond
	reconnectMax     = 400 * time.Millisecond
)

// callTimeout bounds one call: long enough to outlast a paused node
// (2 × TTL), so that its answer after waking is seen.
func callTimeout() time.Duration { return 15*time.Second + 2**clusterTTL }

// toolError is an error the server answered inside the tool result; its
// text starts with the error code ("unavailable: …").
type toolError struct{ text string }

func (e toolError) Error() string { return e.text }

// code is the error code the text starts with.
func (e toolError) code() string {
	c, _, _ := strings.Cut(e.text, ":")
	return c
}

// Outcome classes of a call, as the report counts them.
const (
	outOK          = "ok"
	outUnavailable = "unavailable"
	// outPartial: a feed page that could not read every workspace (one
	// fails over); its changes count, its cursor reads on.
	outPartial    = "teilweise"
	outSession    = "sitzung"    // 404: the node does not know the session
	outConnection = "verbindung" // no answer: refused, reset, timed out
	outOther      = "andere"     // any other tool error: a finding
)

// classify sorts a call's error into an outcome class.
func classify(err error) string {
	var te toolError
	switch {
	case err == nil:
		return outOK
	case errors.As(err, &te) && te.code() == "unavailable":
		return outUnavailable
	case errors.As(err, &te):
		return outOther
	case errors.Is(err, transport.ErrSessionTerminated):
		return outSession
	default:
		return outConnection
	}
}

// quiet is the agents' logger: mcp-go's complaints are not findings.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// agent is one writer.
type agent struct {
	name    string
	node    int
	url     string // the node's /mcp
	token   string
	project string // workspace/project
	slugs   []string
	hc      *http.Client
	c       *client.Client
	n       int           // writes attempted, for unique content
	timeout time.Duration // of one call
	// proposes: the agent's key has role propose, so each remember must
	// answer a pending proposal, which goes into the ledger's proposals.
	proposes bool

	mu       sync.Mutex
	outcomes map[string]int
	firstBad string // the first outOther error, for the report
	// session is the id of the open session ("" without one, and with the
	// sessionless protocol); awaiting404 is set when the session's node was
	// killed, until the agent's next 404 (sessions.go).
	session     string
	awaiting404 bool
	lostSeen    int // 404s that ended an awaited session
}

func newAgent(name string, node int, url, token, project string, slugs []string) *agent {
	return &agent{name: name, node: node, url: url, token: token, project: project, slugs: slugs,
		hc: &http.Client{Timeout: callTimeout(),
			Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second}},
		outcomes: map[string]int{}, timeout: callTimeout()}
}

// connect opens a session (with the legacy protocol, the one with sessions,
// unless -cluster.protokoll says otherwise).
func (a *agent) connect(ctx context.Context) error {
	version := *clusterProtokollVer
	if version == "" {
		version = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	}
	var opts []client.ClientOption
	if !mcp.IsModernProtocol(version) {
		opts = append(opts, client.WithLegacyProtocolOnly())
	}
	// Quiet: closing a session on a node that is gone fails, as expected.
	tr, err := transport.NewStreamableHTTP(a.url, transport.WithHTTPBasicClient(a.hc), transport.WithHTTPLogger(quiet),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + a.token}))
	if err != nil {
		return err
	}
	c := client.NewClient(tr, opts...)
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		return err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mcp.Implementation{Name: a.name, Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		c.Close()
		return err
	}
	a.c = c
	a.mu.Lock()
	if !mcp.IsModernProtocol(version) {
		a.session = c.GetSessionId()
	}
	a.mu.Unlock()
	return nil
}

// close ends the session, if any.
func (a *agent) close() {
	a.mu.Lock()
	a.session = ""
	a.mu.Unlock()
	if a.c != nil {
		a.c.Close()
		a.c = nil
	}
	a.hc.CloseIdleConnections()
}

// written is what a remember answered: a version, or, for a proposing
// key, the pending proposal's id and the version it is based on.
type written struct {
	version  int
	proposal string
	base     int
}

// remember writes content to slug. An agent that proposes must get a
// pending proposal, any other agent a version.
func (a *agent) remember(ctx context.Context, slug, content string) (written, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "remember"
	req.Params.Arguments = map[string]any{"project": a.project, "slug": slug, "content": content}
	res, err := a.c.CallTool(ctx, req)
	if err != nil {
		return written{}, err
	}
	if res.IsError {
		text := "remember failed"
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(mcp.TextContent); ok {
				text = tc.Text
			}
		}
		return written{}, toolError{text}
	}
	m, _ := res.StructuredContent.(map[string]any)
	if a.proposes {
		return pendingOf(m)
	}
	v, ok := m["version"].(float64)
	if !ok || v < 1 {
		return written{}, toolError{fmt.Sprintf("internal: remember answered without a version: %v", res.StructuredContent)}
	}
	return written{version: int(v)}, nil
}

// step makes one attempt: a session if there is none, then one remember.
// It records the outcome, puts an acknowledged write into l and pauses as
// the outcome asks. It returns the ack and whether there was one.
func (a *agent) step(ctx context.Context, l *ledger, pause *time.Duration) (ack, bool) {
	if a.c == nil {
		if err := a.connect(ctx); err != nil {
			a.count(classify(err), err)
			sleep(ctx, *pause)
			*pause = min(2**pause, reconnectMax)
			return ack{}, false
		}
	}
	a.n++
	slug := a.slugs[a.n%len(a.slugs)]
	content := fmt.Sprintf("%s, Schreiben %d in %s (Knoten n%d)", a.name, a.n, slug, a.node)
	sent := time.Now()
	w, err := a.remember(ctx, slug, content)
	out := classify(err)
	if ctx.Err() != nil && out != outOK {
		return ack{}, false // stopped mid-call: not an outcome of the cluster
	}
	a.count(out, err)
	l.observe(a.node, sent, out)
	switch out {
	case outOK:
		*pause = reconnectMin
		if a.proposes {
			l.addProposal(proposalAck{project: a.project, id: w.proposal, slug: slug, content: content, agent: a.name,
				base: w.base, node: a.node, sent: sent, done: time.Now()})
			sleep(ctx, proposePause)
			return ack{}, false
		}
		x := ack{project: a.project, slug: slug, version: w.version, content: content, agent: a.name, node: a.node, sent: sent, done: time.Now()}
		l.add(x)
		return x, true
	case outUnavailable, outOther:
		sleep(ctx, unavailablePause)
	case outSession: // the node is there but forgot the session: a new one at once
		a.close()
		*pause = reconnectMin
	default: // no answer: the same session again, after a growing pause
		sleep(ctx, *pause)
		*pause = min(2**pause, reconnectMax)
	}
	return ack{}, false
}

// run writes until ctx ends.
func (a *agent) run(ctx context.Context, l *ledger) {
	defer a.close()
	pause := reconnectMin
	for ctx.Err() == nil {
		a.step(ctx, l, &pause)
	}
}

// untilAck writes until the first acknowledged write or ctx's end and
// returns that ack. The session stays open.
func (a *agent) untilAck(ctx context.Context, l *ledger) (ack, bool) {
	pause := reconnectMin
	for ctx.Err() == nil {
		if x, ok := a.step(ctx, l, &pause); ok {
			return x, true
		}
	}
	return ack{}, false
}

func (a *agent) count(out string, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.outcomes[out]++
	if out == outSession { // the session is gone: a kill from now on does not end it
		a.session = ""
		if a.awaiting404 {
			a.awaiting404 = false
			a.lostSeen++
		}
	}
	if out == outOther && a.firstBad == "" {
		a.firstBad = fmt.Sprintf("%s über n%d: %v", a.name, a.node, err)
	}
}

// snapshot returns the agent's outcome counts and its first unexpected error.
func (a *agent) snapshot() (map[string]int, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]int, len(a.outcomes))
	for k, v := range a.outcomes {
		out[k] = v
	}
	return out, a.firstBad
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
