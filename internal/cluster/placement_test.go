package cluster

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func workspaces(n int) []string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = fmt.Sprintf("team-%02d", i)
	}
	return ws
}

// TestRankSpreadsADeadNodesWorkspaces: with 3 nodes and 60 workspaces, every node is home to a fair
// share, and when any one node dies its workspaces go to BOTH survivors, each to its next-ranked node.
func TestRankSpreadsADeadNodesWorkspaces(t *testing.T) {
	nodes := []string{"http://10.0.0.1:8080", "http://10.0.0.2:8080", "http://10.0.0.3:8080"}
	home := map[string]int{}
	for _, ws := range workspaces(60) {
		home[Rank(ws, nodes)[0]]++
	}
	for _, nd := range nodes {
		if home[nd] < 10 || home[nd] > 30 {
			t.Errorf("node %s is home to %d of 60 workspaces, want 10..30: %v", nd, home[nd], home)
		}
	}
	for _, dead := range nodes {
		survivors := slices.DeleteFunc(slices.Clone(nodes), func(s string) bool { return s == dead })
		gained := map[string]int{}
		for _, ws := range workspaces(60) {
			full := Rank(ws, nodes)
			if full[0] != dead {
				continue
			}
			heir := Rank(ws, survivors)[0]
			if heir != full[1] {
				t.Fatalf("%s: heir %s is not the second-ranked node %s", ws, heir, full[1])
			}
			gained[heir]++
		}
		for _, s := range survivors {
			if gained[s] == 0 {
				t.Errorf("%s died: survivor %s gained none of its workspaces (%v)", dead, s, gained)
			}
		}
	}
}

// TestRankStableWhenNodesJoin: a joining node only takes workspaces it ranks first for; the order of the
// existing nodes is unchanged for every workspace.
func TestRankStableWhenNodesJoin(t *testing.T) {
	nodes := []string{"http://a:1", "http://b:1", "http://c:1"}
	moved := 0
	for _, ws := range workspaces(60) {
		before := Rank(ws, nodes)
		after := Rank(ws, append(slices.Clone(nodes), "http://d:1", "http://e:1"))
		without := slices.DeleteFunc(slices.Clone(after), func(s string) bool { return s == "http://d:1" || s == "http://e:1" })
		if !slices.Equal(before, without) {
			t.Fatalf("%s: order of existing nodes changed: %v → %v", ws, before, after)
		}
		if after[0] != before[0] {
			moved++
			if after[0] != "http://d:1" && after[0] != "http://e:1" {
				t.Fatalf("%s moved from %s to an old node %s", ws, before[0], after[0])
			}
		}
	}
	// Two of five nodes are new: about 24 of 60 should move to them, never all, never none.
	if moved == 0 || moved > 40 {
		t.Errorf("%d of 60 workspaces moved to the two new nodes", moved)
	}
	// The input order does not matter, and duplicates are dropped.
	if a, b := Rank("ws", []string{"x", "y", "z"}), Rank("ws", []string{"z", "x", "y", "x"}); !slices.Equal(a, b) {
		t.Errorf("rank depends on input order: %v vs %v", a, b)
	}
}

// TestCampaignDelay: the home node campaigns at once, rank r after r steps, a stranger never.
func TestCampaignDelay(t *testing.T) {
	live := []string{"http://a:1", "http://b:1", "http://c:1"}
	order := Rank("ws1", live)
	for r, nd := range order {
		d, ok := CampaignDelay("ws1", nd, live, 300*time.Millisecond)
		if !ok || d != time.Duration(r)*300*time.Millisecond {
			t.Errorf("rank %d node %s: delay %v ok %v", r, nd, d, ok)
		}
	}
	if _, ok := CampaignDelay("ws1", "http://stranger:1", live, time.Second); ok {
		t.Error("a node that is not live may campaign")
	}
}
