//go:build cluster

package clustertest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
)

// t0 is the base of synthetic acks; only differences from it matter.
var t0 = time.Now()

func mkAck(project, slug string, v int, content, agent string, node int, at time.Duration) ack {
	return ack{project: project, slug: slug, version: v, content: content, agent: agent, node: node, sent: t0.Add(at), done: t0.Add(at + time.Millisecond)}
}

// Many goroutines record at once; nothing is lost, and written names the
// workspaces with acks.
func TestLedgerConcurrent(t *testing.T) {
	l := &ledger{}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 500 {
				l.add(mkAck(fmt.Sprintf("bereich-%d/p", g%3), fmt.Sprintf("a%02d/s0", g), i+1, "x", fmt.Sprint(g), 0, 0))
			}
		})
	}
	wg.Wait()
	if l.count() != 16*500 || len(l.all()) != 16*500 {
		t.Fatalf("count %d, all %d; want %d", l.count(), len(l.all()), 16*500)
	}
	w := l.written()
	if len(w) != 3 || !w["bereich-0"] || !w["bereich-2"] {
		t.Fatalf("written %v", w)
	}
}

// contradictions finds a version acknowledged twice with different content
// and an entry whose one writer saw its version go back; consistent acks
// give none.
func TestContradictions(t *testing.T) {
	ok := []ack{
		mkAck("w/p", "a/s0", 1, "eins", "a", 0, 0),
		mkAck("w/p", "a/s0", 2, "zwei", "a", 1, time.Second),
		mkAck("w/p", "a/s0", 4, "vier", "a", 2, 2*time.Second), // v3 unacknowledged: allowed
		mkAck("w/p", "b/s0", 1, "eins", "b", 0, 0),
	}
	if c := contradictions(ok); len(c) != 0 {
		t.Fatalf("consistent acks: %v", c)
	}
	twice := append(ok, mkAck("w/p", "b/s0", 1, "anders", "c", 2, 3*time.Second))
	if c := contradictions(twice); len(c) != 1 || !strings.Contains(c[0], "zweimal") {
		t.Fatalf("version acknowledged twice: %v", c)
	}
	back := append(ok, mkAck("w/p", "a/s0", 3, "drei", "a", 1, 3*time.Second))
	if c := contradictions(back); len(c) != 1 || !strings.Contains(c[0], "v3 bestätigt nach v4") {
		t.Fatalf("version going back: %v", c)
	}
}

// observe counts only calls to the watched node sent from the moment on.
func TestLedgerWatch(t *testing.T) {
	l := &ledger{}
	l.observe(1, t0, outOK) // nothing watched yet
	l.watch(1, t0.Add(time.Second))
	l.observe(1, t0, outOK)                    // before the moment
	l.observe(2, t0.Add(2*time.Second), outOK) // another node
	l.observe(1, t0.Add(time.Second), outUnavailable)
	l.observe(1, t0.Add(3*time.Second), outOK)
	got := l.watchedOutcomes()
	if len(got) != 2 || got[outUnavailable] != 1 || got[outOK] != 1 {
		t.Fatalf("watched %v", got)
	}
}

func TestRateAndAckedBy(t *testing.T) {
	acks := []ack{mkAck("w/p", "s", 1, "", "a", 0, 0), mkAck("w/p", "s", 2, "", "a", 1, time.Second), mkAck("w/p", "s", 3, "", "a", 1, 3*time.Second)}
	if r := rate(acks, t0, t0.Add(2*time.Second)); r != 1 {
		t.Fatalf("rate %v, want 1 (2 acks in 2 s)", r)
	}
	if got := ackedBy(acks, 1, t0.Add(2*time.Second), time.Time{}); len(got) != 1 || got[0].version != 3 {
		t.Fatalf("ackedBy from 2 s: %v", got)
	}
	if got := ackedBy(acks, 1, t0, t0.Add(2*time.Second)); len(got) != 1 || got[0].version != 2 {
		t.Fatalf("ackedBy in [0, 2 s): %v", got)
	}
}

// Only a write received while stopped and answered after SIGCONT counts
// against the paused node; one answered before SIGCONT was served before
// the signal landed.
func TestAckedInPause(t *testing.T) {
	served := mkAck("w/p", "s", 1, "", "a", 1, time.Second) // sent at 1 s, answered at once
	woke := mkAck("w/p", "s", 2, "", "a", 1, 2*time.Second)
	woke.done = t0.Add(5 * time.Second) // answered after SIGCONT at 4 s
	p := paused{idx: 1, at: t0, stopped: t0.Add(500 * time.Millisecond), cont: t0.Add(4 * time.Second)}
	if got := ackedInPause([]ack{served, woke}, p); len(got) != 1 || got[0].version != 2 {
		t.Fatalf("ackedInPause = %v, want only the write answered after SIGCONT", got)
	}
}

// classify sorts errors the way an agent answers them.
func TestClassify(t *testing.T) {
	_, dialErr := net.Dial("tcp", "127.0.0.1:1")
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, outOK},
		{toolError{"unavailable: workspace bereich-1 has no owner"}, outUnavailable},
		{fmt.Errorf("remember: %w", toolError{"unavailable: x"}), outUnavailable},
		{toolError{"forbidden: no key for that project"}, outOther},
		{fmt.Errorf("call: %w", transport.ErrSessionTerminated), outSession},
		{dialErr, outConnection},
		{errors.New("unexpected EOF"), outConnection},
	} {
		if got := classify(c.err); got != c.want {
			t.Errorf("classify(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}

func TestParseToken(t *testing.T) {
	good := "key 7 for agent-01 in bereich-0/p (write) — shown only once:\nmunin_abc_DEF-123\n"
	if tok, err := parseToken(good); err != nil || tok != "munin_abc_DEF-123" {
		t.Fatalf("parseToken: %q, %v", tok, err)
	}
	for _, bad := range []string{"", "munin_abc", "key 7 …:\nnot a key", "key 7 …:\nmunin_a b"} {
		if tok, err := parseToken(bad); err == nil {
			t.Errorf("parseToken(%q) = %q, want an error", bad, tok)
		}
	}
}

// The report names every outage, the p50/max against the bounds, and
// workspaces without a result.
func TestReport(t *testing.T) {
	fs := []failover{
		{label: "Runde 1", node: "n0", workspaces: []string{"a", "b"}, acks: 10, restart: 1500 * time.Millisecond, spread: map[string]int{"n2": 1, "n1": 1},
			newOwner:    map[string]time.Duration{"a": 2100 * time.Millisecond, "b": 2300 * time.Millisecond},
			writesAgain: map[string]time.Duration{"a": 2500 * time.Millisecond, "b": 2700 * time.Millisecond}},
		{label: "Runde 2", node: "n2", workspaces: []string{"c"}, acks: 20, spread: map[string]int{"n0": 1},
			newOwner: map[string]time.Duration{"c": 2200 * time.Millisecond}, writesAgain: map[string]time.Duration{}},
	}
	var b bytes.Buffer
	printRounds(&b, fs)
	printFailoverSummary(&b, fs, 2*time.Second)
	printThroughput(&b, 32, 10*time.Second, "sync", 900, 3000)
	out := b.String()
	for _, want := range []string{"Runde 1", "n0", "2,30 s", "2,70 s", "1,50 s", "Runde 2", "–",
		"bis neuer Eigentümer in etcd", "3,00 s (TTL + 1 s)", "5,00 s (TTL + 3 s)", "2,20 s", "Verhältnis 0,30", "erreicht",
		"n1 1, n2 1", "in 0 von 1 Ausfällen"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	// Three new-owner times: p50 is the middle one; one write time missing.
	v, missing := samples(fs, newOwnerOf)
	if len(v) != 3 || pct(v, 50) != 2200*time.Millisecond || pct(v, 100) != 2300*time.Millisecond || missing != 0 {
		t.Errorf("new owner samples %v (missing %d)", v, missing)
	}
	if _, missing := samples(fs, writesAgainOf); missing != 1 {
		t.Errorf("writes-again missing %d, want 1", missing)
	}
	fs[0].spread = map[string]int{"n1": 2}
	if all, several := oneSurvivor(fs); all != 1 || several != 1 {
		t.Errorf("oneSurvivor: %d of %d", all, several)
	}
	if line := outcomeLine(map[string]int{outOK: 5, outSession: 2}); line != "bestätigt 5, Sitzung verloren (404) 2" {
		t.Errorf("outcomeLine: %q", line)
	}
}
