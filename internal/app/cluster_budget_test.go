package app

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"munin/internal/memory"
)

// A project's write budget holds for the whole cluster: writes through
// either of two nodes count against one budget at the workspace's owner, a
// budget raised through the node that does not own the workspace counts at
// the owner's next write, and after a takeover the new owner counts the
// hour from the restored audit log.
func TestClusterBudgetAtOwner(t *testing.T) {
	requireLitestream(t)
	// The budget counts clock hours: keep the test inside one.
	if left := time.Until(time.Now().Truncate(time.Hour).Add(time.Hour)); left < time.Minute {
		time.Sleep(left + time.Second)
	}
	hour := time.Now().Truncate(time.Hour)
	n1, n2, token := twoNodes(t)
	ctx := context.Background()
	ref := memory.ProjectRef{Workspace: "team", Project: "p"}
	if err := n1.a.Svc.SetProjectWriteBudget(ctx, ref, 6); err != nil {
		t.Fatal(err)
	}
	var seq int
	write := func(n *clusterApp) int {
		t.Helper()
		seq++
		code, body := rest(t, http.MethodPost, n.url+"/api/v1/entries", token,
			fmt.Sprintf(`{"slug":"notes/s%d","title":"t","content":"note %d"}`, seq, seq))
		if code != http.StatusOK && code != http.StatusCreated && code != http.StatusTooManyRequests {
			t.Fatalf("remember %d through %s: %d %s", seq, n.url, code, body)
		}
		return code
	}
	written := func(nodes ...*clusterApp) int {
		t.Helper()
		ok := 0
		for _, n := range nodes {
			if write(n) != http.StatusTooManyRequests {
				ok++
			}
		}
		return ok
	}
	if got := written(n1, n2, n1, n2, n1, n2, n1, n2, n1, n2, n1, n2); got != 6 {
		t.Fatalf("%d of 12 writes through two nodes went through; want the budget's 6", got)
	}
	for _, n := range []*clusterApp{n1, n2} {
		if used, limit, err := n.a.Svc.WriteUsage(ctx, ref); err != nil || used != 6 || limit != 6 {
			t.Fatalf("usage through %s: %d of %d (%v), want 6 of 6", n.url, used, limit, err)
		}
	}

	owner, other, _ := ownerOfTeam(t, n1, n2)
	// Raised through the node that does not own the workspace.
	if err := other.a.Svc.SetProjectWriteBudget(ctx, ref, 8); err != nil {
		t.Fatal(err)
	}
	if got := written(owner, owner, owner); got != 2 {
		t.Fatalf("%d of 3 writes went through after the budget was raised to 8 elsewhere; want 2", got)
	}

	// The owner leaves; the other node takes the workspace over from the
	// replica, and with it the hour's 8 writes.
	owner.stop()
	if got := written(other, other); got != 0 {
		t.Fatalf("%d writes went through the new owner after the hour's 8; want none", got)
	}
	if used, limit, err := other.a.Svc.WriteUsage(ctx, ref); err != nil || used != 8 || limit != 8 {
		t.Fatalf("usage on the new owner: %d of %d (%v), want 8 of 8", used, limit, err)
	}
	if now := time.Now().Truncate(time.Hour); !now.Equal(hour) {
		t.Fatalf("the test ran from %s into %s: its counts span two budget hours", hour, now)
	}
}
