//go:build hostile

// The victim: another project's reader, whose recall latency is the
// measure, and the seeding of both projects.

package hostile

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"munin/internal/app"
)

// terms are the words of the victim's entries and queries.
var terms = []string{"datenbank", "schnittstelle", "sicherung", "migration", "zugriff", "leistung", "protokoll", "speicher"}

// seed writes n entries over REST with key, four writers at a time; text(i)
// is the content of entry i.
func seed(t *testing.T, hc *http.Client, base, key, prefix string, n int, text func(i int) string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				if err := postEntry(hc, base, key, fmt.Sprintf("%s/eintrag-%04d", prefix, i), text(i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// postEntry writes one version of slug over REST with key.
func postEntry(hc *http.Client, base, key, slug, content string) error {
	body := map[string]any{"slug": slug, "content": content}
	resp, err := hc.Do(newReq(context.Background(), http.MethodPost, base+"/api/v1/entries", key, body))
	if err != nil {
		return fmt.Errorf("seed %s: %w", slug, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("seed %s: status %d", slug, resp.StatusCode)
	}
	return nil
}

func victimText(i int) string {
	a, b := terms[i%len(terms)], terms[(i/len(terms)+i+1)%len(terms)]
	return fmt.Sprintf("Notiz %d zu %s und %s\n\nWas das Team über %s beschlossen hat und warum; offen bleibt die Frage nach %s.", i, a, b, a, b)
}

// attackerText is 200 of the common words: every one of them is in most of
// the attacker's entries.
func attackerText(common []string) func(int) string {
	return func(i int) string {
		rng := rand.New(rand.NewPCG(uint64(i), 1))
		words := make([]string, 200)
		for j := range words {
			words[j] = common[rng.IntN(len(common))]
		}
		return strings.Join(words, " ")
	}
}

// victim is the victim project's team: one MCP session per read key, used
// in turn, so that together they recall faster than one key may (the
// server's recall rate is per key; the victim must stay under it).
type victim struct {
	c     []*client.Client
	n     int
	close sync.Once
}

// end closes the sessions (once): before the server stops, so that the
// clients' DELETEs find them.
func (v *victim) end() {
	v.close.Do(func() {
		for _, c := range v.c {
			c.Close()
		}
	})
}

// connectVictim opens a session per key; the clients wait out 429s as a
// well-behaved agent does, so the wait shows in the latency.
func connectVictim(t *testing.T, base string, keys []string, hc *http.Client) *victim {
	t.Helper()
	v := &victim{}
	t.Cleanup(v.end)
	for i, key := range keys {
		tr, err := transport.NewStreamableHTTP(base+"/mcp", transport.WithHTTPBasicClient(hc),
			transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + key}))
		if err != nil {
			t.Fatal(err)
		}
		c := client.NewClient(tr, client.WithLegacyProtocolOnly())
		ctx := context.Background()
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		v.c = append(v.c, c)
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
		init.Params.ClientInfo = mcp.Implementation{Name: fmt.Sprintf("opfer-%d", i+1), Version: "1"}
		if _, err := c.Initialize(ctx, init); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

// recall runs one recall and returns its latency. A recall that found
// nothing is an error too: every query word is in the victim's entries.
func (v *victim) recall(ctx context.Context) (time.Duration, error) {
	v.n++
	req := mcp.CallToolRequest{}
	req.Params.Name = "recall"
	req.Params.Arguments = map[string]any{"query": terms[v.n%len(terms)]}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	start := time.Now()
	res, err := v.c[v.n%len(v.c)].CallTool(ctx, req)
	d := time.Since(start)
	switch {
	case err != nil:
		return d, err
	case res.IsError:
		text := ""
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(mcp.TextContent); ok {
				text = tc.Text
			}
		}
		return d, fmt.Errorf("tool error: %s", text)
	}
	if m, ok := res.StructuredContent.(map[string]any); ok {
		if hits, _ := m["hits"].([]any); len(hits) == 0 {
			return d, fmt.Errorf("recall %q found nothing", req.Params.Arguments.(map[string]any)["query"])
		}
	}
	return d, nil
}

// latencies are the victim's recall times in one phase.
type latencies struct {
	d        []time.Duration
	errs     int
	firstErr string
}

func (l *latencies) add(d time.Duration, err error) {
	if err != nil {
		l.errs++
		if l.firstErr == "" {
			l.firstErr = err.Error()
		}
		return
	}
	l.d = append(l.d, d)
}

// pct is the p-th percentile (nearest rank); 0 without samples.
func (l *latencies) pct(p float64) time.Duration {
	if len(l.d) == 0 {
		return 0
	}
	s := slices.Clone(l.d)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// heap is one reading of the server's heap from /metrics.
type heap struct {
	inuse int64 // go_memstats_heap_inuse_bytes: spans in use, garbage included
	live  int64 // the live heap the last GC marked, from its goal (see liveFromGoal)
}

// liveFromGoal turns the GC's heap goal into the live heap it was computed
// from: goal = live × (1 + GOGC/100) (plus GOGC/100 of stacks and globals,
// so this overestimates a little). /metrics has no live-heap gauge, and heap
// in use is no measure of it at the server's GOGC=400, which lets garbage
// grow to four times the live heap between collections.
func liveFromGoal(goal int64) int64 { return goal * 100 / (100 + app.DefaultGCPercent) }

// heapSample reads the server's heap from /metrics.
func heapSample(ctx context.Context, hc *http.Client, base, key string) (heap, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := hc.Do(newReq(ctx, http.MethodGet, base+"/metrics", key, nil))
	if err != nil {
		return heap{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return heap{}, fmt.Errorf("/metrics: status %d", resp.StatusCode)
	}
	var h heap
	var found int
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || (name != "go_memstats_heap_inuse_bytes" && name != "go_memstats_next_gc_bytes") {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return heap{}, fmt.Errorf("/metrics: %s: %w", name, err)
		}
		found++
		if name == "go_memstats_heap_inuse_bytes" {
			h.inuse = int64(f)
		} else {
			h.live = liveFromGoal(int64(f))
		}
	}
	if found != 2 {
		return heap{}, fmt.Errorf("/metrics lacks go_memstats_heap_inuse_bytes or go_memstats_next_gc_bytes")
	}
	return h, nil
}
