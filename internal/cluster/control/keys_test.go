package control

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"munin/internal/memory"
)

// A drawn key id that is taken is drawn again; a key whose every draw is
// taken fails cleanly and stores nothing (no key, no hash entry).
func TestKeyIDCollisionDrawsAgain(t *testing.T) {
	ctx := context.Background()
	c := openControl(t, startEtcd(t), Options{})
	mustEnsure(t, c, alpha)
	_, first := mustKey(t, c, alpha, "first")
	draws := 0
	c.opts.hookKeyID = func(drawn int64) int64 {
		draws++
		if draws == 1 {
			return first.ID
		}
		return drawn
	}
	tok, second, err := c.CreateKey(ctx, alpha, "second", memory.RoleWrite)
	if err != nil {
		t.Fatalf("create after a collision: %v", err)
	}
	if draws != 2 || second.ID == first.ID {
		t.Fatalf("draws = %d, ids %d and %d; want a second draw and another id", draws, first.ID, second.ID)
	}
	if got, err := c.KeyByToken(ctx, tok); err != nil || got.ID != second.ID {
		t.Fatalf("KeyByToken = %+v, %v; want key %d", got, err, second.ID)
	}

	draws = 0
	c.opts.hookKeyID = func(int64) int64 { draws++; return first.ID }
	if _, _, err := c.CreateKey(ctx, alpha, "third", memory.RoleRead); memory.ErrorCode(err) != memory.CodeInternal {
		t.Fatalf("create with every id taken: %v, want internal", err)
	}
	if draws != memory.KeyIDTries {
		t.Fatalf("draws = %d, want %d", draws, memory.KeyIDTries)
	}
	resp, err := c.cli.Get(ctx, c.paths.ctl+dirKeyHash, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 2 {
		t.Fatalf("hash entries after the failed create: %d, %v; want the first two only", resp.Count, err)
	}
	if keys, _ := c.ListProjectKeys(ctx, alpha); len(keys) != 2 {
		t.Fatalf("keys after the failed create: %d, want 2", len(keys))
	}
}

// Only the SHA-256 of a token goes to etcd — the same hex digest the store
// keeps — and nothing in etcd contains the token.
func TestOnlyTheHashIsStored(t *testing.T) {
	ctx := context.Background()
	c := openControl(t, startEtcd(t), Options{})
	mustEnsure(t, c, alpha)
	tok, k := mustKey(t, c, alpha, "claude")
	srvTok, _, err := c.CreateServerAdminKey(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.KeyByToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if err := c.flushLastUsed(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := c.cli.Get(ctx, "/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		for _, secret := range []string{tok, srvTok} {
			body := strings.TrimPrefix(secret, memory.KeyPrefix)
			if strings.Contains(string(kv.Key), body) || strings.Contains(string(kv.Value), body) {
				t.Fatalf("a token is stored in etcd: %s", kv.Key)
			}
		}
	}
	sum := sha256.Sum256([]byte(tok))
	h, err := c.cli.Get(ctx, c.paths.ctl+"keyhash/"+hex.EncodeToString(sum[:]))
	if err != nil || len(h.Kvs) != 1 || string(h.Kvs[0].Value) != strconv.FormatInt(k.ID, 10) {
		t.Fatalf("keyhash/<hex sha256 of the token> = %v, %v; want the key's id %d", h, err, k.ID)
	}
}

// Authenticating often writes last_used_at once a minute per key, not per call.
func TestLastUsedIsThrottled(t *testing.T) {
	ctx := context.Background()
	c := openControl(t, startEtcd(t), Options{})
	mustEnsure(t, c, alpha)
	tok, k := mustKey(t, c, alpha, "claude")
	for range 5 {
		if _, err := c.KeyByToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.flushLastUsed(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := c.cli.Get(ctx, c.paths.key(k.ID))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatal(resp, err)
	}
	// Version counts the puts of the record: the create and one update.
	if v := resp.Kvs[0].Version; v != 2 {
		t.Fatalf("key record written %d times for 5 authentications; want created + 1 last_used_at", v)
	}
	if got, _ := c.KeyByID(ctx, k.ID); got.LastUsedAt == nil {
		t.Fatal("last_used_at not in the cache after the write")
	}
}

// A use of a key written by one node stops the others from writing their
// own within the minute: one last_used_at write per key and minute for the
// whole cluster, not one per node.
func TestLastUsedOncePerCluster(t *testing.T) {
	ctx := context.Background()
	te := startEtcd(t)
	a, b := openControl(t, te, Options{}), openControl(t, te, Options{})
	mustEnsure(t, a, alpha)
	tok, k := mustKey(t, a, alpha, "claude")
	if _, err := a.KeyByToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if err := a.flushLastUsed(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "B sees A's last_used_at", func() bool {
		got, err := b.KeyByID(ctx, k.ID)
		return err == nil && got.LastUsedAt != nil
	})
	if got, err := b.KeyByToken(ctx, tok); err != nil || got.LastUsedAt == nil {
		t.Fatalf("B.KeyByToken = %+v, %v", got, err)
	}
	if err := b.flushLastUsed(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := a.cli.Get(ctx, a.paths.key(k.ID))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatal(resp, err)
	}
	if v := resp.Kvs[0].Version; v != 2 {
		t.Fatalf("key record written %d times by two nodes' first uses; want created + 1", v)
	}
}
