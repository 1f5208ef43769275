package control

import (
	"log/slog"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"munin/internal/memory"
)

func testCache() *cache {
	return newCache(paths{ctl: "/munin/ctl/"}, slog.New(slog.DiscardHandler))
}

func kv(k, v string, rev int64) *mvccpb.KeyValue {
	return &mvccpb.KeyValue{Key: []byte(k), Value: []byte(v), ModRevision: rev}
}

func budget(c *cache) int {
	p, _ := c.project(alpha)
	return p.WriteBudget
}

// An entry is only replaced by a newer revision, whichever source delivers
// the older one later: a node's own write applied at once is not undone by
// its watch delivering an older change afterwards.
func TestCacheNeverGoesBack(t *testing.T) {
	c := testCache()
	p := c.paths
	c.events([]*mvccpb.Event{{Type: mvccpb.PUT, Kv: kv(p.proj(alpha), `{"created_at":1}`, 5)}}, 5)
	c.put(kv(p.budgets(alpha)+budgetWrites, "50", 10)) // this node's write, applied at once
	c.events([]*mvccpb.Event{{Type: mvccpb.PUT, Kv: kv(p.budgets(alpha)+budgetWrites, "49", 9)}}, 9)
	if b := budget(c); b != 50 {
		t.Fatalf("budget = %d after an older watch event; want 50 (the newer own write)", b)
	}
	c.events([]*mvccpb.Event{{Type: mvccpb.PUT, Kv: kv(p.budgets(alpha)+budgetWrites, "51", 11)}}, 11)
	if b := budget(c); b != 51 {
		t.Fatalf("budget = %d after a newer watch event; want 51", b)
	}

	// A key revoked by this node stays revoked when an older record (from a
	// slow cache-miss lookup) arrives afterwards.
	c.put(kv(p.key(7), `{"id":7,"agent":"a","role":"read","hash":"h7","created_at":1,"revoked_at":3}`, 20))
	c.put(kv(p.key(7), `{"id":7,"agent":"a","role":"read","hash":"h7","created_at":1}`, 15))
	if e, ok := c.keyByHash("h7"); !ok || e.rec.RevokedAt == 0 {
		t.Fatalf("key 7 = %+v, %v; want revoked", e, ok)
	}
}

// A reload replaces the cache with the snapshot, but keeps what is newer
// than the snapshot (this node's writes meanwhile) and drops what the
// snapshot no longer has.
func TestCacheReplaceKeepsNewer(t *testing.T) {
	c := testCache()
	p := c.paths
	beta := memory.ProjectRef{Workspace: "team", Project: "beta"}
	c.put(kv(p.proj(alpha), `{"created_at":1}`, 5))
	c.put(kv(p.proj(beta), `{"created_at":1}`, 6))                                           // deleted before the snapshot
	c.put(kv(p.key(9), `{"id":9,"agent":"a","role":"read","hash":"h9","created_at":1}`, 30)) // written after it
	c.replace([]*mvccpb.KeyValue{kv(p.proj(alpha), `{"created_at":1}`, 5), kv(p.budgets(alpha)+budgetBytes, "7", 12)}, 20)
	if _, ok := c.project(beta); ok {
		t.Error("a project missing from the newer snapshot is still cached")
	}
	if pr, ok := c.project(alpha); !ok || pr.WriteBudgetBytes != 7 {
		t.Errorf("project from the snapshot = %+v, %v", pr, ok)
	}
	if _, ok := c.keyByHash("h9"); !ok {
		t.Error("a key written after the snapshot was dropped by the reload")
	}
	if c.revision() != 20 {
		t.Errorf("revision = %d, want the snapshot's 20", c.revision())
	}
	// A deletion removes the entry and its hash.
	c.events([]*mvccpb.Event{{Type: mvccpb.DELETE, Kv: kv(p.key(9), "", 31)}}, 31)
	if _, ok := c.keyByHash("h9"); ok {
		t.Error("a deleted key still authenticates")
	}
}

// Records that do not decode are skipped, not fatal; unknown keys are ignored.
func TestCacheSkipsBadRecords(t *testing.T) {
	c := testCache()
	p := c.paths
	c.put(kv(p.proj(alpha), `{"created_at":1}`, 1))
	c.put(kv(p.key(3), `not json`, 2))
	c.put(kv(p.key(4), `{"id":5,"hash":"h"}`, 3)) // id does not match its key
	c.put(kv(p.budgets(alpha)+budgetWrites, "-1", 4))
	c.put(kv(p.budgets(alpha)+"other", "5", 5))
	c.put(kv("/munin/ctl/unknown/x", "y", 6))
	if len(c.keys) != 0 || len(c.byHash) != 0 || len(c.budgets) != 0 || budget(c) != 0 {
		t.Fatalf("bad records were cached: keys %v, budgets %v", c.keys, c.budgets)
	}
}
