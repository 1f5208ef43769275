//go:build last

// The load test's agents: one MCP session per key and the closed loop of
// calls each agent runs.

package lasttest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"munin/internal/httpretry"
)

func seededSlug(i int) string    { return fmt.Sprintf("wissen/eintrag-%04d", i) }
func agentName(i int) string     { return fmt.Sprintf("agent-%03d", i) }
func contestedSlug(i int) string { return fmt.Sprintf("gemeinsam-%02d", i) }

// rememberContent is a contested write: its unique word first, so that the
// check can find it again in the entry's last version.
func rememberContent(agent, n int, word string) string {
	return fmt.Sprintf("%s: Stand von agent-%03d, Schritt %d\n\nDas Team hält fest, was es zu %s und %s entschieden hat.",
		word, agent, n, terms[agent%len(terms)], terms[n%len(terms)])
}

// uniqueWord is a word no other write uses: letters only, so every analyzer
// keeps it as one token.
func uniqueWord(agent, n int) string {
	const letters = "bcdfghjklmnpqrstvwxz"
	var b strings.Builder
	b.WriteString("qy")
	for _, v := range []int{agent, n} {
		for {
			b.WriteByte(letters[v%len(letters)])
			v /= len(letters)
			if v == 0 {
				break
			}
		}
		b.WriteByte('y')
	}
	return b.String()
}

// transportFor is the one HTTP transport all agents share; it keeps an idle
// connection per agent (Go's default of two per host would open and close a
// connection per call and run the machine out of local ports).
func transportFor(agents int) *http.Client {
	return &http.Client{Transport: httpretry.On429{Next: &http.Transport{
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: agents + 8,
		MaxConnsPerHost:     0,
		IdleConnTimeout:     90 * time.Second,
	}, Seen: countOverload}}
}

// agent is one MCP session with its own key (or keys, in setup 4).
type agent struct {
	id int
	c  *client.Client
	// projects are the projects ("workspace/project") the agent works in:
	// its one project, or every project of setup 4.
	projects []string
	// named: every get and remember names its project, recall does not
	// (it searches all of the agent's projects).
	named bool
	lat   map[string][]time.Duration
	err   map[string]int
	// firstErr keeps one error text for the report.
	firstErr string
	// review is the shared state of setup 5 (nil elsewhere): remember
	// proposes there, and every recall answer is checked (pruefung.go).
	review *stand
	// acks are the acknowledged remembers of the load phase
	// (abonnenten.go matches them to the subscribers' updates).
	acks []quittung
}

// protocolVersion is the MCP version the agents speak (-last.protokoll). Up
// to 2025-11-25 a client opens a session with initialize and sends its id
// with every call; 2026-07-28 has no sessions, every request stands alone.
func protocolVersion() string {
	if *lastProtokoll == "" {
		return mcp.LATEST_LEGACY_PROTOCOL_VERSION
	}
	return *lastProtokoll
}

// checkProtocol fails the test for a version mcp-go does not know.
func checkProtocol(t testing.TB) {
	if !mcp.IsValidProtocolVersion(protocolVersion()) {
		t.Fatalf("last.protokoll %q: bekannt sind %v", protocolVersion(), mcp.ValidProtocolVersions)
	}
}

func connect(ctx context.Context, hc *http.Client, url, token string, id int) (*agent, time.Duration, error) {
	start := time.Now()
	var opts []client.ClientOption
	if !mcp.IsModernProtocol(protocolVersion()) {
		// Without this the client would probe for 2026-07-28 first.
		opts = append(opts, client.WithLegacyProtocolOnly())
	}
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(hc),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		return nil, 0, err
	}
	c := client.NewClient(tr, opts...)
	if err := c.Start(ctx); err != nil {
		return nil, 0, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = protocolVersion()
	init.Params.ClientInfo = mcp.Implementation{Name: fmt.Sprintf("lasttest-%03d", id), Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		c.Close()
		return nil, 0, err
	}
	return &agent{id: id, c: c, lat: map[string][]time.Duration{}, err: map[string]int{}}, time.Since(start), nil
}

// connectAll opens one session per token concurrently and records the
// session setup as the tool "verbinden".
func connectAll(t testing.TB, hc *http.Client, url string, tokens []string, firstID int) ([]*agent, time.Duration) {
	agents := make([]*agent, len(tokens))
	lat := make([]time.Duration, len(tokens))
	var wg sync.WaitGroup
	errs := make(chan error, len(tokens))
	start := time.Now()
	for i, tok := range tokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, d, err := connect(context.Background(), hc, url, tok, firstID+i)
			if err != nil {
				errs <- fmt.Errorf("agent %d: verbinden: %w", firstID+i, err)
				return
			}
			agents[i], lat[i] = a, d
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	agents[0].lat["verbinden"] = lat
	return agents, wall
}

// call runs one tool and returns its structured content; a tool error is an
// error. It records the latency and counts a failure.
func (a *agent) call(ctx context.Context, tool string, args map[string]any) (any, error) {
	start := time.Now()
	sc, err := callRaw(ctx, a.c, tool, args)
	a.lat[tool] = append(a.lat[tool], time.Since(start))
	if err != nil {
		a.fail(tool, err)
	}
	return sc, err
}

// callRaw runs one tool on c and records nothing (setup 5's reviewer calls
// from several goroutines and records under a lock of its own).
func callRaw(ctx context.Context, c *client.Client, tool string, args map[string]any) (any, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err == nil && res.IsError {
		text := ""
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(mcp.TextContent); ok {
				text = tc.Text
			}
		}
		err = fmt.Errorf("tool error: %s", text)
	}
	if err != nil {
		return nil, err
	}
	return res.StructuredContent, nil
}

// fail counts a failed call of name and keeps the first error's text.
func (a *agent) fail(name string, err error) {
	a.err[name]++
	if a.firstErr == "" {
		a.firstErr = fmt.Sprintf("%s: %v", name, err)
	}
}

// assign gives agent a.id its projects in setup s: project id mod N, or
// all of them.
func (a *agent) assign(s aufbau) {
	a.named = s.multi
	a.projects = a.projects[:0]
	for i, ref := range s.projects {
		if s.multi || i == a.id%len(s.projects) {
			a.projects = append(a.projects, ref.String())
		}
	}
}

// work is one agent's closed loop until the deadline. It returns the number
// of successful remember calls per project.
func (a *agent) work(deadline time.Time) map[string]int {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(a.id), uint64(time.Now().UnixNano())))
	written, n := map[string]int{}, 0
	for time.Now().Before(deadline) {
		n++
		project := a.projects[rng.IntN(len(a.projects))]
		// with names the project; without, the key's one project is meant.
		with := func(args map[string]any) map[string]any {
			if a.named {
				args["project"] = project
			}
			return args
		}
		switch r := rng.IntN(300); {
		case r < 3**lastSchreibanteil && a.review != nil:
			a.propose(ctx, rng, n)
		case r < 3**lastSchreibanteil:
			word := uniqueWord(a.id, n)
			slug, contested := contestedSlug(rng.IntN(*lastSlugs)), true
			if rng.IntN(100) < *lastNeu {
				// A slug nobody wrote: remember looks for similar entries
				// first (the duplicate hint); the stock check counts only
				// the contested slugs.
				slug, contested = fmt.Sprintf("neu/a%03d-%d", a.id, n), false
			}
			args := with(map[string]any{"slug": slug, "content": rememberContent(a.id, n, word)})
			sc, err := a.call(ctx, "remember", args)
			if err == nil {
				a.quittiere(sc)
			}
			if err == nil && contested {
				written[project]++
			}
		case (r-3**lastSchreibanteil)%3 < 2:
			// Never with a project: in setup 4 this searches every project.
			q, mixed := recallQuery(rng)
			if a.review != nil {
				// Setup 5 asks now and then for an entry that went stale.
				if w, ok := a.review.staleQuery(rng); ok {
					q, mixed = w, false
				}
			}
			start := time.Now()
			sc, err := a.call(ctx, "recall", map[string]any{"query": q})
			if a.review != nil && err == nil {
				a.review.checkRecall(a.id, start, sc)
			}
			if l := a.lat["recall"]; mixed {
				a.lat[recallMix] = append(a.lat[recallMix], l[len(l)-1])
			}
		default:
			a.call(ctx, "get", with(map[string]any{"slug": seededSlug(rng.IntN(*lastEintraege))}))
		}
	}
	return written
}
