package app

import (
	"testing"

	"munin/internal/store"
)

// TestLatestCacheSettingReachesTheStore: --latest-cache-bytes sizes the
// store's cache of latest versions, on by default and 0 turning it off, on a
// single server and on a cluster node alike (whose store the cache serves
// only while it owns a workspace: store.CloseWorkspace drops it).
func TestLatestCacheSettingReachesTheStore(t *testing.T) {
	c := Config{Config: DefaultConfig()}
	if got := storeOptions(c, nil).LatestCacheBytes; got != store.DefaultLatestCacheBytes || got <= 0 {
		t.Errorf("default: store cache %d bytes, want %d", got, store.DefaultLatestCacheBytes)
	}
	var node clusterNode
	if got := node.storeOptions(storeOptions(c, nil)).LatestCacheBytes; got != store.DefaultLatestCacheBytes {
		t.Errorf("cluster node: store cache %d bytes, want %d", got, store.DefaultLatestCacheBytes)
	}
	c.Storage.LatestCacheBytes = 0
	if got := storeOptions(c, nil).LatestCacheBytes; got != 0 {
		t.Errorf("0 turns the cache off, store got %d bytes", got)
	}
	c.Storage.LatestCacheBytes = 1 << 20
	if got := storeOptions(c, nil).LatestCacheBytes; got != 1<<20 {
		t.Errorf("1 MiB set, store got %d bytes", got)
	}
}
