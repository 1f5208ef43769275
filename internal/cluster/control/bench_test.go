package control

import (
	"context"
	"testing"

	"munin/internal/memory"
	"munin/internal/store"
)

// BenchmarkKeyByToken compares authentication by a cached key: the etcd
// control's map lookup against the store's key cache.
func BenchmarkKeyByToken(b *testing.B) {
	ctx := context.Background()
	c := openControl(b, startEtcd(b), Options{})
	s, err := store.Open(b.TempDir(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	for name, a := range map[string]api{"etcd": c, "store": s} {
		if _, err := a.EnsureProject(ctx, alpha); err != nil {
			b.Fatal(err)
		}
		tok, _, err := a.CreateKey(ctx, alpha, "bench", memory.RoleWrite)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := a.KeyByToken(ctx, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// An unknown token: one linearizable etcd Get per call.
	b.Run("etcd-miss", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.KeyByToken(ctx, "munin_unknown"); memory.ErrorCode(err) != memory.CodeUnauthorized {
				b.Fatal(err)
			}
		}
	})
}
