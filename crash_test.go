//go:build crash

// The crash test: the built binary runs as a child process while 16+ agents
// write over MCP; it is killed with SIGKILL at random moments, restarted, and
// every acknowledged version must be there, exactly, gapless and findable.
// Besides the contested slugs crash/sNN the agents remember and forget the
// slugs crash/fNN; after each restart every slug's latest state in the files
// must be what recall shows: a live entry found by its last unique word, a
// forgotten one found by none. Beside them agents with a propose key propose
// and a reviewer approves and rejects (crash_review_test.go): every
// acknowledged proposal and decision must be in the files, no approval
// applied twice.
//
//	go test -tags crash -run TestCrash -v . [-crash.runden=20] [-crash.agenten=16] [-crash.vergessen=4] [-crash.vorschlagende=2]
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	_ "github.com/mattn/go-sqlite3"
)

var (
	crashRounds = flag.Int("crash.runden", 20, "kill -9 rounds")
	crashAgents = flag.Int("crash.agenten", 16, "concurrent writing agents")
	crashSlugs  = flag.Int("crash.slugs", 8, "contested slugs")
	crashForget = flag.Int("crash.vergessen", 4, "slugs that are remembered and forgotten by turns")
)

// ack is one acknowledged remember or forget: the server answered with this
// version. A forget's content is the tombstone mark.
type ack struct {
	slug, content string
	version       int
}

// tombstone stands for a deleted version's content in acks and in what
// readVersions stores: no remembered content can hold a NUL byte.
const tombstone = "\x00forgotten"

func TestCrash(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "munin")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	data := t.TempDir()
	var acks []ack
	ledger := newReviewLedger()
	lost, totalKills := 0, 0
	start := time.Now()

	// The first start makes default/default and its admin key (the
	// writers' and the reviewer's); the propose key is made while the
	// server is down.
	first := startChild(t, bin, data, true)
	token := first.token
	first.cmd.Process.Signal(syscall.SIGTERM)
	first.cmd.Wait()
	proposer := proposeKey(t, bin, data)

	for round := 1; round <= *crashRounds; round++ {
		srv := startChild(t, bin, data, false)
		// Write until a random moment, then kill without warning.
		ctx, cancel := context.WithCancel(context.Background())
		var mu sync.Mutex
		var wg sync.WaitGroup
		for a := 0; a < *crashAgents; a++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := connectMCP(ctx, srv.url, token)
				if err != nil {
					return // the kill may come before the session
				}
				defer c.Close()
				for i := 0; ctx.Err() == nil; i++ {
					slug := fmt.Sprintf("crash/s%02d", rand.IntN(*crashSlugs))
					content := fmt.Sprintf("round %d agent %d write %d word r%da%dw%d", round, a, i, round, a, i)
					if *crashForget > 0 && rand.IntN(4) == 0 {
						// A quarter of the calls go to the forget slugs,
						// half of them forgets: an entry there is live
						// or forgotten at a kill about equally often.
						slug = fmt.Sprintf("crash/f%02d", rand.IntN(*crashForget))
						if rand.IntN(2) == 0 {
							content = tombstone
						}
					}
					var v int
					var err error
					if content == tombstone {
						v, err = forget(ctx, c, slug)
					} else {
						v, err = remember(ctx, c, slug, content)
					}
					if err != nil {
						continue // unacknowledged: may or may not exist (or nothing to forget)
					}
					mu.Lock()
					acks = append(acks, ack{slug, content, v})
					mu.Unlock()
				}
			}()
		}
		for p := 0; p < *crashProposers; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ledger.propose(ctx, srv.url, proposer, round, p)
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ledger.review(ctx, srv.url, token)
		}()
		time.Sleep(time.Duration(300+rand.IntN(900)) * time.Millisecond)
		if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		srv.cmd.Wait()
		totalKills++
		cancel()
		wg.Wait()

		// Restart and check everything acknowledged so far.
		srv = startChild(t, bin, data, false)
		lost += verify(t, srv.url, token, data, acks)
		lost += verifyProposals(t, data, ledger)
		srv.cmd.Process.Signal(syscall.SIGTERM)
		srv.cmd.Wait()
		t.Logf("Runde %2d: %5d bestätigte Fassungen, %4d Vorschläge, %4d Freigaben, %3d Ablehnungen bisher, verloren: %d",
			round, len(acks), len(ledger.proposals), len(ledger.approved), len(ledger.rejected), lost)
	}
	forgets := 0
	for _, a := range acks {
		if a.content == tombstone {
			forgets++
		}
	}
	t.Logf("Ergebnis: %d Runden mit kill -9, %d bestätigte Fassungen (davon %d vergessen), %d Vorschläge, %d Freigaben, %d Ablehnungen, %d verloren, Dauer %s",
		totalKills, len(acks), forgets, len(ledger.proposals), len(ledger.approved), len(ledger.rejected), lost, time.Since(start).Round(time.Second))
	if lost > 0 {
		t.Fatalf("%d acknowledged versions, proposals or decisions lost", lost)
	}
	if len(acks) == 0 || (*crashForget > 0 && forgets == 0) {
		t.Fatalf("%d writes and %d forgets acknowledged: the test proved too little", len(acks), forgets)
	}
	if *crashProposers > 0 && (len(ledger.approved) == 0 || len(ledger.rejected) == 0) {
		t.Fatalf("%d proposals, %d approvals and %d rejections acknowledged: the test proved too little",
			len(ledger.proposals), len(ledger.approved), len(ledger.rejected))
	}
}

// verify checks acknowledged versions, gaplessness, integrity and recall; it
// returns how many acknowledged versions are missing or differ.
func verify(t *testing.T, url, token, data string, acks []ack) int {
	t.Helper()
	stored := map[string]string{} // "slug@version" → content (tombstone for a forget)
	latest := map[string]slugState{}
	files, _ := filepath.Glob(filepath.Join(data, "*.db"))
	for _, f := range files {
		db, err := sql.Open("sqlite3", "file:"+f+"?mode=ro&_busy_timeout=5000")
		if err != nil {
			t.Fatal(err)
		}
		var res string
		if err := db.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil || res != "ok" {
			t.Errorf("integrity_check %s: %q, %v", filepath.Base(f), res, err)
		}
		if filepath.Base(f) != "_control.db" {
			readVersions(t, db, stored, latest)
		}
		db.Close()
	}
	lost := 0
	for _, a := range acks {
		if got, ok := stored[fmt.Sprintf("%s@%d", a.slug, a.version)]; !ok || got != a.content {
			lost++
			t.Errorf("acknowledged %s v%d: stored %q (present %v), want %q", a.slug, a.version, got, ok, a.content)
		}
	}

	// Over MCP after the restart, the server must show each slug's latest
	// state in the files: get answers it, recall finds a live entry by its
	// last version's unique word, and a forgotten entry not by the unique
	// word of its last live version — the index (rebuilt, reopened or
	// caught up) holds neither a stale nor a forgotten version.
	ctx := context.Background()
	c, err := connectMCP(ctx, url, token)
	if err != nil {
		t.Fatalf("connect after restart: %v", err)
	}
	defer c.Close()
	var slugs []string
	for s := 0; s < *crashSlugs; s++ {
		slugs = append(slugs, fmt.Sprintf("crash/s%02d", s))
	}
	for s := 0; s < *crashForget; s++ {
		slugs = append(slugs, fmt.Sprintf("crash/f%02d", s))
	}
	for s := 0; s < *crashPSlugs; s++ {
		slugs = append(slugs, fmt.Sprintf("crash/p%02d", s)) // written by approvals only
	}
	live, forgotten := 0, 0
	for _, slug := range slugs {
		st, ok := latest[slug]
		var got struct {
			Version int `json:"version"`
		}
		err := callTool(ctx, c, "get", map[string]any{"slug": slug}, &got)
		switch {
		case !ok || st.deleted:
			if err == nil || !strings.HasPrefix(err.Error(), "not_found") {
				t.Errorf("get %s after restart: v%d, %v; want not_found (in the files: %+v)", slug, got.Version, err, st)
			}
		case err != nil || got.Version != st.version:
			t.Errorf("get %s after restart: v%d, %v; want v%d", slug, got.Version, err, st.version)
		}
		if !ok {
			continue // not written yet
		}
		word := lastWord(st.liveContent)
		hits, err := recallHits(ctx, c, word)
		if err != nil {
			t.Errorf("recall %q after restart: %v", word, err)
			continue
		}
		if st.deleted {
			forgotten++
			for _, h := range hits {
				if h.Slug == slug {
					t.Errorf("recall %q after restart finds %s v%d, forgotten in v%d", word, slug, h.Version, st.version)
				}
			}
			continue
		}
		live++
		if len(hits) == 0 || hits[0].Slug != slug || hits[0].Version != st.version {
			t.Errorf("recall %q after restart: %+v; want %s v%d", word, hits, slug, st.version)
		}
	}
	if live == 0 && len(acks) > 0 {
		t.Errorf("no slug could be read back after the restart, though %d writes were acknowledged", len(acks))
	}
	t.Logf("nach dem Neustart per get und recall geprüft: %d lebende und %d vergessene Einträge", live, forgotten)
	return lost
}

// slugState is a slug's latest version in the files and the content of its
// latest live version (for a forgotten slug, the one before the tombstone).
type slugState struct {
	version     int
	deleted     bool
	liveContent string
}

type hit struct {
	Slug    string `json:"slug"`
	Version int    `json:"version"`
}

func recallHits(ctx context.Context, c *client.Client, query string) ([]hit, error) {
	var res struct {
		Hits []hit `json:"hits"`
	}
	err := callTool(ctx, c, "recall", map[string]any{"query": query}, &res)
	return res.Hits, err
}

// lastWord is a content's unique word, e.g. r3a5w17.
func lastWord(content string) string { return content[strings.LastIndex(content, " ")+1:] }

// readVersions loads every version of a workspace file and checks that each
// slug's versions are exactly 1..n; latest gets each slug's last state.
func readVersions(t *testing.T, db *sql.DB, stored map[string]string, latest map[string]slugState) {
	t.Helper()
	rows, err := db.Query("SELECT slug, version, content, deleted FROM versions ORDER BY project, slug, version")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var slug, content string
		var v int
		var deleted bool
		if err := rows.Scan(&slug, &v, &content, &deleted); err != nil {
			t.Fatal(err)
		}
		st := latest[slug]
		if v != st.version+1 {
			t.Errorf("%s: version %d follows %d — a gap or a duplicate", slug, v, st.version)
		}
		st.version, st.deleted = v, deleted
		if deleted {
			content = tombstone
		} else {
			st.liveContent = content
		}
		latest[slug] = st
		stored[fmt.Sprintf("%s@%d", slug, v)] = content
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

type child struct {
	cmd   *exec.Cmd
	url   string
	token string
}

var keyLine = regexp.MustCompile(`^\s+(munin_[A-Za-z0-9_-]+)\s*$`)

// startChild runs the binary on a free port and waits until it serves; on the
// first start it reads the bootstrap key from its output.
func startChild(t *testing.T, bin, data string, wantKey bool) child {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	// All agents share the first key; the limits per key would turn most of
	// their writes away, and this test is about durability, not limits.
	cmd := exec.Command(bin, "serve", "--data", data, "--addr", addr, "--budget-off",
		"--rate-per-key=-1", "--max-inflight-per-key=-1")
	logFile, err := os.Create(filepath.Join(t.TempDir(), "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logFile // request logs: kept for a failing run, not printed
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c := child{cmd: cmd, url: "http://" + addr + "/mcp"}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			if wantKey {
				c.token = firstKey(t, data)
			}
			return c
		}
	}
	t.Fatal("server did not come up")
	return c
}

// firstKey returns the project key of the first start. The child's stdout
// is no terminal, so the server writes its keys to first-keys.txt in the
// data directory (renamed into place whole) rather than printing them;
// the project key is the first key line there.
func firstKey(t *testing.T, data string) string {
	t.Helper()
	path := filepath.Join(data, "first-keys.txt")
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		text, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(text), "\n") {
			if m := keyLine.FindStringSubmatch(line); m != nil {
				return m[1]
			}
		}
		t.Fatalf("no key in %s", path)
	}
	t.Fatalf("no %s on first start", path)
	return ""
}

func connectMCP(ctx context.Context, url, token string) (*client.Client, error) {
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "crash", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func forget(ctx context.Context, c *client.Client, slug string) (int, error) {
	var res struct {
		Version int `json:"version"`
	}
	err := callTool(ctx, c, "forget", map[string]any{"slug": slug}, &res)
	return res.Version, err
}

func remember(ctx context.Context, c *client.Client, slug, content string) (int, error) {
	var res struct {
		Version int `json:"version"`
	}
	err := callTool(ctx, c, "remember", map[string]any{"slug": slug, "content": content}, &res)
	return res.Version, err
}

// callTool runs a tool and decodes its structuredContent; a tool error is an error.
func callTool(ctx context.Context, c *client.Client, name string, args map[string]any, out any) error {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return err
	}
	if res.IsError {
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(mcp.TextContent); ok {
				return fmt.Errorf("%s", tc.Text)
			}
		}
		return fmt.Errorf("%s failed", name)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}
