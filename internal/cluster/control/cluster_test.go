package control

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"munin/internal/memory"
)

// holdWatch returns a hook that holds a Control's first watch back until
// release is called (later watches pass), and release (idempotent).
func holdWatch() (hook func(int64), release func()) {
	ch := make(chan struct{})
	var first, once sync.Once
	return func(int64) { first.Do(func() { <-ch }) }, func() { once.Do(func() { close(ch) }) }
}

// eventually waits, a bounded number of times, until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 1000 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s: still not so after 1000 checks 10ms apart", what)
}

func mustEnsure(t *testing.T, c *Control, r memory.ProjectRef) {
	t.Helper()
	if _, err := c.EnsureProject(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

func mustKey(t *testing.T, c *Control, r memory.ProjectRef, agent string) (string, memory.Key) {
	t.Helper()
	tok, k, err := c.CreateKey(context.Background(), r, agent, memory.RoleWrite)
	if err != nil {
		t.Fatal(err)
	}
	return tok, k
}

// A key created on node A authenticates on node B at once, although B's
// watch has not delivered it: B asks etcd once on the miss and then serves
// the key from its cache.
func TestMissPathFindsKeyOfOtherNode(t *testing.T) {
	ctx := context.Background()
	te := startEtcd(t)
	a := openControl(t, te, Options{})
	hook, release := holdWatch()
	b := openControl(t, te, Options{hookBeforeWatch: hook})
	t.Cleanup(release)

	mustEnsure(t, a, alpha)
	tok, k := mustKey(t, a, alpha, "claude")
	if p, err := b.Project(ctx, alpha); err != nil || p.Ref != alpha {
		t.Fatalf("B.Project of a project made on A = %+v, %v", p, err)
	}
	got, err := b.KeyByToken(ctx, tok)
	if err != nil || got.ID != k.ID || got.Agent != "claude" || got.Project != alpha {
		t.Fatalf("B.KeyByToken of a key made on A = %+v, %v", got, err)
	}
	if n := b.etcdGets.Load(); n != 3 {
		t.Fatalf("B asked etcd %d times for a project and a key; want 3 (project, hash, key)", n)
	}
	if _, err := b.KeyByToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if _, err := b.KeyByID(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if n := b.etcdGets.Load(); n != 3 {
		t.Fatalf("B asked etcd again (%d lookups) for a key it had found: the miss did not fill the cache", n)
	}
	if _, err := b.KeyByToken(ctx, "munin_madeup"); memory.ErrorCode(err) != memory.CodeUnauthorized {
		t.Fatalf("unknown token on B: %v, want unauthorized", err)
	}
}

// A key revoked on A is refused by A at once and by B within its watch
// delay; B learns it from the watch, not by asking etcd.
func TestRevokeReachesOtherNode(t *testing.T) {
	ctx := context.Background()
	te := startEtcd(t)
	a, b := openControl(t, te, Options{}), openControl(t, te, Options{})
	mustEnsure(t, a, alpha)
	tok, k := mustKey(t, a, alpha, "claude")
	if _, err := b.KeyByToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	gets := b.etcdGets.Load()
	if err := a.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.KeyByToken(ctx, tok); memory.ErrorCode(err) != memory.CodeUnauthorized {
		t.Fatalf("A right after its revoke: %v, want unauthorized", err)
	}
	eventually(t, "B refuses the key revoked on A", func() bool {
		_, err := b.KeyByToken(ctx, tok)
		return memory.ErrorCode(err) == memory.CodeUnauthorized
	})
	if n := b.etcdGets.Load(); n != gets {
		t.Fatalf("B asked etcd %d times while waiting; the revocation must come through the watch", n-gets)
	}
	if kb, err := b.KeyByID(ctx, k.ID); err != nil || !kb.Revoked {
		t.Fatalf("B.KeyByID = %+v, %v; want revoked", kb, err)
	}
}

// 16 goroutines over two nodes ensure the same project: exactly one creates it.
func TestEnsureProjectOnceAcrossNodes(t *testing.T) {
	ctx := context.Background()
	te := startEtcd(t)
	nodes := []*Control{openControl(t, te, Options{}), openControl(t, te, Options{})}
	var created atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			c, err := nodes[i%2].EnsureProject(ctx, alpha)
			if err != nil {
				t.Error(err)
			}
			if c {
				created.Add(1)
			}
		})
	}
	wg.Wait()
	if n := created.Load(); n != 1 {
		t.Fatalf("%d of 16 concurrent EnsureProject calls reported created, want 1", n)
	}
	for i, n := range nodes {
		eventually(t, "both nodes list the project and its workspace", func() bool {
			ps, _ := n.ListProjects(ctx)
			ws := n.Workspaces()
			return len(ps) == 1 && ps[0].Ref == alpha && len(ws) == 1 && ws[0] == "team"
		})
		if c, err := n.EnsureProject(ctx, alpha); c || err != nil {
			t.Fatalf("node %d: EnsureProject of an existing project = %v, %v", i, c, err)
		}
	}
}

// Budgets set on one node are seen on the other, and concurrent changes of
// the two budgets on two nodes lose neither (compare-and-swap, not a blind
// put from a stale cache).
func TestBudgetsAcrossNodes(t *testing.T) {
	ctx := context.Background()
	te := startEtcd(t)
	a, b := openControl(t, te, Options{}), openControl(t, te, Options{})
	mustEnsure(t, a, alpha)
	if _, err := b.Project(ctx, alpha); err != nil {
		t.Fatal(err)
	}
	if err := a.SetWriteBudget(ctx, alpha, 300); err != nil {
		t.Fatal(err)
	}
	eventually(t, "B sees A's budget", func() bool {
		p, err := b.Project(ctx, alpha)
		return err == nil && p.WriteBudget == 300
	})

	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			var err error
			if i%2 == 0 {
				err = a.SetWriteBudget(ctx, alpha, 777)
			} else {
				err = b.SetWriteBudgetBytes(ctx, alpha, 888)
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for name, n := range map[string]*Control{"A": a, "B": b} {
		eventually(t, name+" sees both budgets", func() bool {
			p, err := n.Project(ctx, alpha)
			return err == nil && p.WriteBudget == 777 && p.WriteBudgetBytes == 888
		})
	}
}

// With etcd gone, cached keys and projects still answer (revoked keys stay
// refused); writes and lookups that miss the cache answer unavailable,
// naming etcd, and change nothing.
func TestEtcdDown(t *testing.T) {
	ctx := context.Background()
	te := startEtcd(t)
	a := openControl(t, te, Options{Timeout: 300 * time.Millisecond})
	mustEnsure(t, a, alpha)
	tok, k := mustKey(t, a, alpha, "live")
	tok2, k2 := mustKey(t, a, alpha, "gone")
	if err := a.RevokeKey(ctx, k2.ID); err != nil {
		t.Fatal(err)
	}
	te.cut(t, a.cli)

	if got, err := a.KeyByToken(ctx, tok); err != nil || got.ID != k.ID {
		t.Fatalf("cached key with etcd down: %+v, %v", got, err)
	}
	if _, err := a.KeyByToken(ctx, tok2); memory.ErrorCode(err) != memory.CodeUnauthorized {
		t.Fatalf("revoked key with etcd down: %v, want unauthorized", err)
	}
	if p, err := a.Project(ctx, alpha); err != nil || p.Ref != alpha {
		t.Fatalf("cached project with etcd down: %+v, %v", p, err)
	}
	if ks, err := a.ListKeys(ctx); err != nil || len(ks) != 2 {
		t.Fatalf("ListKeys with etcd down: %d keys, %v", len(ks), err)
	}
	_, unknownErr := a.KeyByToken(ctx, "munin_notcached")
	_, _, createErr := a.CreateKey(ctx, alpha, "new", memory.RoleRead)
	_, ensureErr := a.EnsureProject(ctx, beta)
	_, missErr := a.Project(ctx, beta)
	for name, err := range map[string]error{
		"CreateKey": createErr, "EnsureProject": ensureErr, "RevokeKey": a.RevokeKey(ctx, k.ID),
		"SetWriteBudget": a.SetWriteBudget(ctx, alpha, 5), "uncached KeyByToken": unknownErr, "uncached Project": missErr,
	} {
		if memory.ErrorCode(err) != memory.CodeUnavailable || !strings.Contains(memory.PublicMessage(err), "etcd") {
			t.Errorf("%s with etcd down: %v, want unavailable naming etcd", name, err)
		}
	}
	if _, err := a.KeyByToken(ctx, tok); err != nil {
		t.Fatalf("the failed revoke changed the key: %v", err)
	}
	if p, _ := a.Project(ctx, alpha); p.WriteBudget != 0 {
		t.Fatalf("the failed budget change changed the cache: %d", p.WriteBudget)
	}
}

// A node cut off from etcd while the cluster goes on keeps answering from
// its cache: a key revoked elsewhere meanwhile still works there (the
// documented bound), and its writes answer unavailable. Once reconnected,
// its watch resumes (reloading, as etcd compacted the revisions it missed):
// the revocation and a key made meanwhile take effect.
func TestCutOffNodeCatchesUp(t *testing.T) {
	ctx := context.Background()
	te := startEtcd(t)
	u, err := url.Parse(te.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	px := newProxy(t, u.Host)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + px.addr}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	a, err := Open(ctx, cli, Options{Timeout: 300 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	b := openControl(t, te, Options{})

	mustEnsure(t, b, alpha)
	tok, k := mustKey(t, b, alpha, "claude")
	if _, err := a.KeyByToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	px.cut()
	if err := b.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	tok2, _ := mustKey(t, b, alpha, "later")
	// Compacted meanwhile: the reconnected watch cannot resume, the node reloads.
	now, err := b.cli.Get(ctx, "compact-probe")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.cli.Compact(ctx, now.Header.Revision); err != nil {
		t.Fatal(err)
	}
	if _, err := a.KeyByToken(ctx, tok); err != nil {
		t.Fatalf("cut-off node, cached key: %v; want it still served from the cache", err)
	}
	if _, _, err := a.CreateKey(ctx, alpha, "x", memory.RoleRead); memory.ErrorCode(err) != memory.CodeUnavailable {
		t.Fatalf("cut-off node, CreateKey: %v, want unavailable", err)
	}
	px.restore(t)
	eventually(t, "the reconnected node refuses the key revoked while it was cut off", func() bool {
		_, err := a.KeyByToken(ctx, tok)
		return memory.ErrorCode(err) == memory.CodeUnauthorized
	})
	if _, err := a.KeyByToken(ctx, tok2); err != nil {
		t.Fatalf("key made while cut off, after reconnecting: %v", err)
	}
}
