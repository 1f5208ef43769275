package store

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
)

func cacheKey(slug string) latestKey { return latestKey{ws: 1, project: "p", slug: slug} }

func cachedVersion(slug string, version, size int) memory.Version {
	until := time.Unix(1_900_000_000, 0).UTC()
	return memory.Version{Slug: slug, Version: version, Title: "t", Content: strings.Repeat("x", size),
		Tags: []string{"a", "b"}, Supersedes: []string{"old"}, ValidUntil: &until}
}

// TestLatestCacheStaysWithinItsBytes: however many values are put, the
// cache holds at most its bytes, evicts the least recently used first, and
// keeps one that was read lately.
func TestLatestCacheStaysWithinItsBytes(t *testing.T) {
	const max = 16 << 10
	c := newLatestCache(max)
	c.put(cacheKey("keep"), cachedVersion("keep", 1, 1000), c.begin())
	for i := range 200 {
		slug := fmt.Sprintf("s%03d", i)
		c.put(cacheKey(slug), cachedVersion(slug, 1, 1000), c.begin())
		if _, ok := c.get(cacheKey("keep")); !ok {
			t.Fatalf("after %d puts the value read after every put was evicted", i+1)
		}
		if bytes, _ := c.size(); bytes > max {
			t.Fatalf("after %d puts the cache holds %d bytes, more than its %d", i+1, bytes, max)
		}
	}
	if _, ok := c.get(cacheKey("s000")); ok {
		t.Error("the least recently used value was not evicted")
	}
	if _, ok := c.get(cacheKey("s199")); !ok {
		t.Error("the newest value was evicted")
	}
	if bytes, nodes := c.size(); bytes < max/2 || nodes < 5 {
		t.Errorf("cache holds %d bytes in %d nodes: it evicts far more than it must", bytes, nodes)
	}
	// A value larger than an eighth of the cache is not kept at all.
	c.put(cacheKey("huge"), cachedVersion("huge", 1, max/4), c.begin())
	if _, ok := c.get(cacheKey("huge")); ok {
		t.Error("a value of a quarter of the cache was kept")
	}
}

// TestLatestCacheSharesNothing: changing the value put, or a value handed
// out, changes nothing the next reader gets.
func TestLatestCacheSharesNothing(t *testing.T) {
	c := newLatestCache(1 << 20)
	v := cachedVersion("a", 1, 10)
	c.put(cacheKey("a"), v, c.begin())
	v.Tags[0], v.Supersedes[0] = "changed", "changed"
	*v.ValidUntil = time.Time{}

	got, ok := c.get(cacheKey("a"))
	if !ok {
		t.Fatal("miss after put")
	}
	if got.Tags[0] != "a" || got.Supersedes[0] != "old" || got.ValidUntil.IsZero() {
		t.Fatalf("the cache shares the put value's slices or time: %+v", got)
	}
	got.Tags[1], got.Supersedes[0] = "changed", "changed"
	*got.ValidUntil = time.Time{}
	got.Tags = append(got.Tags[:0], "x")

	again, _ := c.get(cacheKey("a"))
	if again.Tags[0] != "a" || again.Tags[1] != "b" || again.Supersedes[0] != "old" || again.ValidUntil.IsZero() {
		t.Fatalf("the cache shares a handed-out value's slices or time: %+v", again)
	}
}

// TestLatestCacheRefusesFillsOlderThanAnInvalidation: a reader that began
// before an invalidation of its slug cannot fill it, whether or not the slug
// was cached, and whether or not its fence was evicted since; one that began
// after can.
func TestLatestCacheRefusesFillsOlderThanAnInvalidation(t *testing.T) {
	c := newLatestCache(1 << 20)
	c.put(cacheKey("a"), cachedVersion("a", 1, 10), c.begin())

	before := c.begin()
	c.invalidate(1, []projectSlug{{"p", "a"}, {"p", "never-cached"}})
	if _, ok := c.get(cacheKey("a")); ok {
		t.Fatal("an invalidated value is still answered")
	}
	c.put(cacheKey("a"), cachedVersion("a", 1, 10), before)
	c.put(cacheKey("never-cached"), cachedVersion("never-cached", 1, 10), before)
	for _, slug := range []string{"a", "never-cached"} {
		if _, ok := c.get(cacheKey(slug)); ok {
			t.Errorf("%s: a fill begun before its invalidation was taken", slug)
		}
	}
	// Another workspace instance's slug of the same name is not fenced.
	other := latestKey{ws: 2, project: "p", slug: "a"}
	c.put(other, cachedVersion("a", 7, 10), before)
	if _, ok := c.get(other); !ok {
		t.Error("an invalidation of workspace 1 fenced workspace 2")
	}

	after := c.begin()
	c.put(cacheKey("a"), cachedVersion("a", 2, 10), after)
	if v, ok := c.get(cacheKey("a")); !ok || v.Version != 2 {
		t.Errorf("a fill begun after the invalidation: %+v, %v; want version 2", v, ok)
	}

	// Evict the fence of "b": the floor still refuses a fill begun before it.
	small := newLatestCache(4 << 10)
	old := small.begin()
	small.invalidate(1, []projectSlug{{"p", "b"}})
	for i := range 100 {
		small.invalidate(1, []projectSlug{{"p", fmt.Sprintf("filler%03d", i)}})
	}
	small.put(cacheKey("b"), cachedVersion("b", 1, 10), old)
	if _, ok := small.get(cacheKey("b")); ok {
		t.Error("a fill begun before an evicted fence was taken")
	}
}

// TestLatestCachePurge: a purged workspace instance answers nothing and
// takes no fill begun before the purge; other instances keep theirs.
func TestLatestCachePurge(t *testing.T) {
	c := newLatestCache(1 << 20)
	other := latestKey{ws: 2, project: "p", slug: "a"}
	c.put(cacheKey("a"), cachedVersion("a", 1, 10), c.begin())
	c.put(other, cachedVersion("a", 1, 10), c.begin())
	before := c.begin()
	c.purge(1)
	if _, ok := c.get(cacheKey("a")); ok {
		t.Error("a purged instance still answers")
	}
	if _, ok := c.get(other); !ok {
		t.Error("purging instance 1 dropped instance 2's value")
	}
	c.put(cacheKey("b"), cachedVersion("b", 1, 10), before)
	if _, ok := c.get(cacheKey("b")); ok {
		t.Error("a fill begun before the purge was taken")
	}
}

// TestLatestManyArity: the statement shapes stay few and cover n.
func TestLatestManyArity(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 2, 3: 4, 10: 16, 300: 256 * 2, 500: 500} {
		if want > latestManyChunk {
			want = latestManyChunk
		}
		if got := latestManyArity(n); got != want {
			t.Errorf("latestManyArity(%d) = %d, want %d", n, got, want)
		}
	}
}
