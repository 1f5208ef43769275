package control

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"munin/internal/memory"
)

// When the revisions a node's watch needs are compacted away, the node
// reloads everything and goes on watching: it then refuses a key revoked
// meanwhile and sees budgets and projects changed meanwhile.
func TestWatchReloadsAfterCompaction(t *testing.T) {
	ctx := context.Background()
	te := startEtcd(t)
	a := openControl(t, te, Options{})
	mustEnsure(t, a, alpha)
	tok, k := mustKey(t, a, alpha, "claude")

	hook, release := holdWatch()
	b := openControl(t, te, Options{hookBeforeWatch: hook})
	t.Cleanup(release)
	if _, err := b.KeyByToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if err := a.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if err := a.SetWriteBudget(ctx, alpha, 42); err != nil {
		t.Fatal(err)
	}
	mustEnsure(t, a, beta)
	resp, err := a.cli.Get(ctx, "compact-probe")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	if b.Revision() >= resp.Header.Revision {
		t.Fatalf("B's cache is at revision %d, not behind the compaction at %d: the test tests nothing", b.Revision(), resp.Header.Revision)
	}
	release()

	eventually(t, "B sees the changes made while its watch was compacted away", func() bool {
		_, err := b.KeyByToken(ctx, tok)
		p, perr := b.Project(ctx, alpha)
		ps, _ := b.ListProjects(ctx)
		return memory.ErrorCode(err) == memory.CodeUnauthorized && perr == nil && p.WriteBudget == 42 && len(ps) == 2
	})
	if n := b.etcdGets.Load(); n != 0 {
		t.Fatalf("B answered from %d etcd lookups; all of this must come from its cache", n)
	}
	// And the watch runs again after the reload.
	if err := a.SetWriteBudget(ctx, alpha, 43); err != nil {
		t.Fatal(err)
	}
	eventually(t, "B's watch runs after the reload", func() bool {
		p, err := b.Project(ctx, alpha)
		return err == nil && p.WriteBudget == 43
	})
}

// While many goroutines authenticate with a key, it is revoked on the same
// node: no lookup that starts after RevokeKey returned succeeds.
func TestRevocationUnderLoad(t *testing.T) {
	ctx := context.Background()
	c := openControl(t, startEtcd(t), Options{})
	mustEnsure(t, c, alpha)
	tok, k := mustKey(t, c, alpha, "claude")
	var revoked atomic.Bool
	var lookups, after atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 16 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				late := revoked.Load()
				_, err := c.KeyByToken(ctx, tok)
				lookups.Add(1)
				if late {
					after.Add(1)
					if err == nil {
						t.Error("a lookup that started after RevokeKey returned still succeeded")
						return
					}
				}
			}
		})
	}
	eventually(t, "lookups running", func() bool { return lookups.Load() > 1000 })
	if err := c.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	revoked.Store(true)
	eventually(t, "lookups after the revocation", func() bool { return after.Load() > 1000 })
	close(stop)
	wg.Wait()
}

// Open fails with a message naming etcd and its endpoint when etcd does not
// answer; a prefix must be absolute.
func TestOpenErrors(t *testing.T) {
	endpoint := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	_, err = Open(context.Background(), cli, Options{Timeout: 300 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "etcd") || !strings.Contains(err.Error(), endpoint) {
		t.Fatalf("Open without etcd: %v, want an error naming etcd at %s", err, endpoint)
	}
	if _, err := Open(context.Background(), cli, Options{Prefix: "munin"}); err == nil || !strings.Contains(err.Error(), `"munin"`) {
		t.Fatalf("Open with a relative prefix: %v", err)
	}
}

// Two clusters under different prefixes of one etcd see nothing of each other.
func TestPrefixesAreSeparate(t *testing.T) {
	ctx := context.Background()
	te := startEtcd(t)
	one, two := openControl(t, te, Options{Prefix: "/one"}), openControl(t, te, Options{Prefix: "/two/"})
	mustEnsure(t, one, alpha)
	tok, _ := mustKey(t, one, alpha, "claude")
	if _, err := two.Project(ctx, alpha); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Fatalf("project of /one under /two: %v, want not_found", err)
	}
	if _, err := two.KeyByToken(ctx, tok); memory.ErrorCode(err) != memory.CodeUnauthorized {
		t.Fatalf("key of /one under /two: %v, want unauthorized", err)
	}
	resp, err := one.cli.Get(ctx, "/one/ctl/proj/team/alpha")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("project record not at /one/ctl/proj/team/alpha: %v, %v", resp, err)
	}
}
