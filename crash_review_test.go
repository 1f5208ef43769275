//go:build crash

// Proposals and approvals under kill -9 (part of TestCrash in
// crash_test.go): agents with a propose key propose versions of the slugs
// crash/pNN while a reviewer with the project's admin key lists the pending
// proposals with MCP's review tool and approves most (naming the entry's latest version
// as expected_version) and rejects some. After every restart, read from the
// files: every acknowledged proposal is there as proposed; every
// acknowledged approval is its version, there exactly once; every
// acknowledged rejection is rejected; each approved proposal has exactly
// one version and one approve row in the audit log (an approval applied
// twice would leave a version no proposal accounts for), and the versions
// of crash/pNN are exactly the approved proposals.

package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
)

var (
	crashProposers = flag.Int("crash.vorschlagende", 2, "concurrent agents with a propose key")
	crashPSlugs    = flag.Int("crash.vslugs", 4, "slugs crash/pNN the proposing agents write")
)

// proposalAck is one acknowledged proposal: the server answered state
// pending with this id.
type proposalAck struct {
	id            int64
	slug, content string
}

// reviewLedger holds everything acknowledged about proposals so far.
type reviewLedger struct {
	mu        sync.Mutex
	proposals []proposalAck
	approved  map[int64]int // proposal id → version the approval answered
	rejected  map[int64]bool
}

func newReviewLedger() *reviewLedger {
	return &reviewLedger{approved: map[int64]int{}, rejected: map[int64]bool{}}
}

// proposeKey makes the propose key of default/default with the command
// line while the server is down (no REST route makes keys).
func proposeKey(t *testing.T, bin, data string) string {
	t.Helper()
	out, err := exec.Command(bin, "key", "create", "--data", data, "--role", "propose", "--agent", "vorschlag").CombinedOutput()
	if err != nil {
		t.Fatalf("key create: %v\n%s", err, out)
	}
	lines := strings.Fields(strings.TrimSpace(string(out)))
	return lines[len(lines)-1]
}

// propose is one proposing agent's loop until ctx ends.
func (l *reviewLedger) propose(ctx context.Context, mcpURL, token string, round, agent int) {
	c, err := connectMCP(ctx, mcpURL, token)
	if err != nil {
		return // the kill may come before the session
	}
	defer c.Close()
	for i := 0; ctx.Err() == nil; i++ {
		slug := fmt.Sprintf("crash/p%02d", rand.IntN(*crashPSlugs))
		content := fmt.Sprintf("round %d proposer %d write %d word r%dp%dw%d", round, agent, i, round, agent, i)
		id, err := proposeOnce(ctx, c, slug, content)
		if err != nil {
			continue // unacknowledged: may or may not exist
		}
		l.mu.Lock()
		l.proposals = append(l.proposals, proposalAck{id, slug, content})
		l.mu.Unlock()
	}
}

// proposeOnce remembers with a propose key and returns the proposal's
// number (the last part of its id "workspace.project.n").
func proposeOnce(ctx context.Context, c *client.Client, slug, content string) (int64, error) {
	var res struct {
		State    string `json:"state"`
		Proposal string `json:"proposal"`
	}
	if err := callTool(ctx, c, "remember", map[string]any{"slug": slug, "content": content}, &res); err != nil {
		return 0, err
	}
	if res.State != "pending" {
		return 0, fmt.Errorf("remember with a propose key answered state %q", res.State)
	}
	return proposalNumber(res.Proposal)
}

func proposalNumber(id string) (int64, error) {
	return strconv.ParseInt(id[strings.LastIndex(id, ".")+1:], 10, 64)
}

// review is the reviewer's loop until ctx ends, over MCP's review tool:
// list the pending proposals, decide each slug's in order.
func (l *reviewLedger) review(ctx context.Context, mcpURL, token string) {
	c, err := connectMCP(ctx, mcpURL, token)
	if err != nil {
		return // the kill may come before the session
	}
	defer c.Close()
	for ctx.Err() == nil {
		var page struct {
			Proposals []struct {
				ID             string `json:"id"`
				Slug           string `json:"slug"`
				CurrentVersion int    `json:"current_version"`
			} `json:"proposals"`
		}
		if err := callTool(ctx, c, "review", map[string]any{"action": "list"}, &page); err != nil || len(page.Proposals) == 0 {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		cur := map[string]int{}
		for _, p := range page.Proposals {
			if _, ok := cur[p.Slug]; !ok {
				cur[p.Slug] = p.CurrentVersion
			}
		}
		for _, p := range page.Proposals {
			n, err := proposalNumber(p.ID)
			if err != nil || ctx.Err() != nil {
				break
			}
			if rand.IntN(5) == 0 {
				args := map[string]any{"action": "reject", "id": p.ID, "reason": "crash test: one in five"}
				if callTool(ctx, c, "review", args, &struct{}{}) == nil {
					l.mu.Lock()
					l.rejected[n] = true
					l.mu.Unlock()
				}
				continue
			}
			var res struct {
				Proposals []struct {
					Version int `json:"version"`
				} `json:"proposals"`
			}
			args := map[string]any{"action": "approve", "id": p.ID, "expected_version": cur[p.Slug]}
			if callTool(ctx, c, "review", args, &res) != nil || len(res.Proposals) != 1 {
				// Unacknowledged (or the entry moved): the next listing tells.
				break
			}
			cur[p.Slug] = res.Proposals[0].Version
			l.mu.Lock()
			l.approved[n] = res.Proposals[0].Version
			l.mu.Unlock()
		}
	}
}

// storedProposal is a proposal row as the files hold it.
type storedProposal struct {
	slug, content, state string
	version              int
	audit                map[string]int // action → audit rows naming the proposal
}

// verifyProposals checks the files against the ledger; it returns how many
// acknowledged proposals or decisions are missing or differ.
func verifyProposals(t *testing.T, data string, l *reviewLedger) int {
	t.Helper()
	stored := map[int64]*storedProposal{}
	versions := map[string]string{} // "slug@version" → content, crash/pNN only
	files, _ := filepath.Glob(filepath.Join(data, "*.db"))
	for _, f := range files {
		if filepath.Base(f) != "_control.db" {
			readProposals(t, f, stored, versions)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lost := 0
	for _, a := range l.proposals {
		if p, ok := stored[a.id]; !ok || p.slug != a.slug || p.content != a.content {
			lost++
			t.Errorf("acknowledged proposal %d (%s %q): stored %+v", a.id, a.slug, a.content, p)
		}
	}
	for id, v := range l.approved {
		if p, ok := stored[id]; !ok || p.state != "approved" || p.version != v {
			lost++
			t.Errorf("acknowledged approval of proposal %d as v%d: stored %+v", id, v, p)
		}
	}
	for id := range l.rejected {
		if p, ok := stored[id]; !ok || p.state != "rejected" {
			lost++
			t.Errorf("acknowledged rejection of proposal %d: stored %+v", id, p)
		}
	}
	// Each approved proposal is one version with its content and one
	// approve row; nothing else wrote crash/pNN, so the versions there are
	// exactly the approved proposals.
	approvedVersions := map[string]int64{}
	for id, p := range stored {
		want := map[string]int{"propose": 1}
		switch p.state {
		case "approved":
			want["approve"] = 1
			at := fmt.Sprintf("%s@%d", p.slug, p.version)
			if other, dup := approvedVersions[at]; dup {
				t.Errorf("proposals %d and %d both approved as %s", other, id, at)
			}
			approvedVersions[at] = id
			if got, ok := versions[at]; !ok || got != p.content {
				t.Errorf("approved proposal %d: %s holds %q (present %v), want %q", id, at, got, ok, p.content)
			}
		case "rejected":
			want["reject"] = 1
		}
		for _, action := range []string{"propose", "approve", "reject"} {
			if p.audit[action] != want[action] {
				t.Errorf("proposal %d (%s): %d audit rows %s, want %d", id, p.state, p.audit[action], action, want[action])
			}
		}
	}
	if len(versions) != len(approvedVersions) {
		t.Errorf("crash/pNN hold %d versions, %d proposals are approved: an approval applied twice or lost", len(versions), len(approvedVersions))
	}
	return lost
}

// readProposals loads the proposals of one workspace file with their audit
// rows, and the versions of crash/pNN.
func readProposals(t *testing.T, file string, stored map[int64]*storedProposal, versions map[string]string) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+file+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	scan := func(query string, row func(*sql.Rows) error) {
		rows, err := db.Query(query)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := row(rows); err != nil {
				t.Fatal(err)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	scan(`SELECT id, slug, content, state, coalesce(version, 0) FROM proposals`, func(r *sql.Rows) error {
		var id int64
		p := &storedProposal{audit: map[string]int{}}
		err := r.Scan(&id, &p.slug, &p.content, &p.state, &p.version)
		stored[id] = p
		return err
	})
	scan(`SELECT proposal, action, count(*) FROM audit_log WHERE proposal IS NOT NULL GROUP BY proposal, action`, func(r *sql.Rows) error {
		var id int64
		var action string
		var n int
		if err := r.Scan(&id, &action, &n); err != nil {
			return err
		}
		if p, ok := stored[id]; ok {
			p.audit[action] = n
		} else {
			t.Errorf("audit rows %s name proposal %d, which does not exist", action, id)
		}
		return nil
	})
	scan(`SELECT slug, version, content FROM versions WHERE slug LIKE 'crash/p%'`, func(r *sql.Rows) error {
		var slug, content string
		var v int
		err := r.Scan(&slug, &v, &content)
		versions[fmt.Sprintf("%s@%d", slug, v)] = content
		return err
	})
}
