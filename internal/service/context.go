package service

import (
	"context"

	"munin/internal/memory"
)

type keyCtx struct{}

// WithKey returns ctx carrying the authenticated key; transports set it once
// after authentication so handlers never read credentials themselves.
func WithKey(ctx context.Context, key memory.Key) context.Context {
	return context.WithValue(ctx, keyCtx{}, key)
}

// KeyFrom returns the authenticated key of ctx, or CodeUnauthorized.
func KeyFrom(ctx context.Context) (memory.Key, error) {
	key, ok := ctx.Value(keyCtx{}).(memory.Key)
	if !ok {
		return memory.Key{}, memory.Errorf(memory.CodeUnauthorized, "missing key: send Authorization: Bearer munin_…")
	}
	return key, nil
}
