package control

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"munin/internal/memory"
)

// snapshot renders everything a Control lists, exactly (times included).
func snapshot(t *testing.T, c *Control) string {
	t.Helper()
	ctx := context.Background()
	ps, err := c.ListProjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := c.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := fmt.Sprint(c.Workspaces())
	for _, p := range ps {
		out += fmt.Sprintf("\n%s %d %d %d", p.Ref, p.WriteBudget, p.WriteBudgetBytes, p.CreatedAt.UnixNano())
	}
	for _, k := range ks {
		used := int64(0)
		if k.LastUsedAt != nil {
			used = k.LastUsedAt.UnixNano()
		}
		out += fmt.Sprintf("\n%d %s %s %s %d %d %v", k.ID, k.ProjectLabel(), k.Agent, k.Role, k.CreatedAt.UnixNano(), used, k.Revoked)
	}
	return out
}

// Two nodes change the same control data from many goroutines at once
// (projects, budgets, keys, revocations, authentications writing
// last_used_at). Afterwards both caches converge on exactly what a node
// that loads everything fresh from etcd sees.
func TestCachesConverge(t *testing.T) {
	ctx := context.Background()
	te := startEtcd(t)
	nodes := []*Control{openControl(t, te, Options{}), openControl(t, te, Options{})}
	refs := []memory.ProjectRef{alpha, beta, ref("other", "gamma")}
	var mu sync.Mutex
	var tokens []string
	var ids []int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			c := nodes[g%2]
			for range 40 {
				r := refs[rng.IntN(len(refs))]
				var err error
				switch op := rng.IntN(6); op {
				case 0:
					_, err = c.EnsureProject(ctx, r)
				case 1:
					err = c.SetWriteBudget(ctx, r, rng.IntN(1000))
				case 2:
					err = c.SetWriteBudgetBytes(ctx, r, rng.IntN(1000))
				case 3:
					var tok string
					var k memory.Key
					if tok, k, err = c.CreateKey(ctx, r, fmt.Sprintf("agent-%d", g), memory.RoleWrite); err == nil {
						mu.Lock()
						tokens, ids = append(tokens, tok), append(ids, k.ID)
						mu.Unlock()
					}
				case 4, 5:
					mu.Lock()
					n := len(ids)
					var tok string
					var id int64
					if n > 0 {
						i := rng.IntN(n)
						tok, id = tokens[i], ids[i]
					}
					mu.Unlock()
					if n == 0 {
						continue
					}
					if op == 4 {
						err = c.RevokeKey(ctx, id)
					} else if _, err = c.KeyByToken(ctx, tok); memory.ErrorCode(err) == memory.CodeUnauthorized {
						err = nil // revoked meanwhile
					}
				}
				if err != nil && memory.ErrorCode(err) != memory.CodeNotFound {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, c := range nodes {
		if err := c.flushLastUsed(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := snapshot(t, openControl(t, te, Options{}))
	if len(ids) == 0 {
		t.Fatal("no key was created: the test tests nothing")
	}
	for i, c := range nodes {
		eventually(t, fmt.Sprintf("node %d's cache equals a fresh load", i), func() bool { return snapshot(t, c) == want })
	}
}

// A node reads its own budget change at once while another node changes the
// other budget of the same project in a loop: neither contends with the
// other (each budget is a key of its own) nor hides the node's own write.
func TestReadYourWritesUnderOtherNodesChanges(t *testing.T) {
	ctx := context.Background()
	te := startEtcd(t)
	a, b := openControl(t, te, Options{}), openControl(t, te, Options{})
	mustEnsure(t, a, alpha)
	if _, err := b.Project(ctx, alpha); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := b.SetWriteBudgetBytes(ctx, alpha, i); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for i := 1; i <= 100; i++ {
		if err := a.SetWriteBudget(ctx, alpha, i); err != nil {
			t.Fatal(err)
		}
		if p, err := a.Project(ctx, alpha); err != nil || p.WriteBudget != i {
			close(stop)
			wg.Wait()
			t.Fatalf("A read write budget %d (%v) right after setting %d", p.WriteBudget, err, i)
		}
	}
	close(stop)
	wg.Wait()
}
