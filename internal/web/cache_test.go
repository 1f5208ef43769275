package web

import (
	"context"
	"strconv"
	"sync"
	"testing"
)

// TestRenderCacheBoundedInBytes: the cache never holds more than its bound,
// drops the least recently used first, and keeps no item over an eighth.
func TestRenderCacheBoundedInBytes(t *testing.T) {
	c := newRenderCache(8000)
	fill := func(key string, size int) {
		_, hit, done, err := c.get(context.Background(), key)
		if err != nil || hit {
			t.Fatalf("get %s: hit %v, %v", key, hit, err)
		}
		done(key, size)
	}
	for i := range 20 {
		fill("k"+strconv.Itoa(i), 400)
		if items, bytes, _ := c.stats(); bytes > 8000 || items == 0 {
			t.Fatalf("after %d puts: %d items, %d bytes", i+1, items, bytes)
		}
	}
	if _, hit, _, _ := c.get(context.Background(), "k0"); hit {
		t.Fatal("the oldest item is still there")
	}
	if v, hit, _, _ := c.get(context.Background(), "k19"); !hit || v != "k19" {
		t.Fatalf("the newest item: %v %v", v, hit)
	}
	fill("big", 1001)
	if _, hit, _, _ := c.get(context.Background(), "big"); hit {
		t.Fatal("an item over an eighth of the bound was kept")
	}
}

// TestRenderCacheComputesOnce: concurrent requests for one key wait for
// the first one's render instead of computing it again; a request whose
// context ends while waiting gives up.
func TestRenderCacheComputesOnce(t *testing.T) {
	c := newRenderCache(1 << 20)
	_, _, done, _ := c.get(context.Background(), "k")
	const waiters = 8
	var wg sync.WaitGroup
	got := make(chan any, waiters)
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, hit, _, err := c.get(context.Background(), "k")
			if err != nil || !hit {
				t.Errorf("waiter: hit %v, %v", hit, err)
			}
			got <- v
		}()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, _, err := c.get(ctx, "k"); err == nil {
		t.Error("a cancelled request waited on")
	}
	done("value", 10)
	wg.Wait()
	close(got)
	for v := range got {
		if v != "value" {
			t.Errorf("waiter got %v", v)
		}
	}
	if _, _, misses := c.stats(); misses != 1 {
		t.Errorf("%d renders, want 1", misses)
	}
}
