package web

import (
	"math/rand/v2"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// hostileDiff is two versions of 64 KiB each that share almost no line
// order: lines "a" and "b" in two independent random orders, so the line
// diff has tens of thousands of changes (the 1.38 s, 4 MB diff).
func hostileDiff() (string, string) {
	gen := func(seed uint64) string {
		r := rand.New(rand.NewPCG(seed, 1))
		var b strings.Builder
		for b.Len() < memory.DefaultMaxContent-2 {
			if r.IntN(2) == 0 {
				b.WriteString("a\n")
			} else {
				b.WriteString("b\n")
			}
		}
		return b.String()
	}
	return gen(1), gen(2)
}

// hostileQuotes is an entry of 65,536 '>': one blockquote inside the next.
func hostileQuotes() string { return strings.Repeat(">", memory.DefaultMaxContent) }

// benchPage serves path b.N times for a read key's session and reports the
// size of the page; cold empties the render cache before each request.
func benchPage(b *testing.B, u *ui, path string, cold bool) {
	sess := u.h.sessions.create(memory.NewCaller(u.readKey))
	b.ReportAllocs()
	size := 0
	for b.Loop() {
		if cold {
			u.h.pages.cache = newRenderCache(renderCacheBytes)
		}
		size = serveBench(b, u, sess, path)
	}
	b.ReportMetric(float64(size), "page-bytes")
}

// newBenchUI is a UI without a recall rate: the pages below are heavy work
// (service.HeavyWork), which a benchmark would otherwise meet 10 times a
// second.
func newBenchUI(b *testing.B) *ui {
	return newUIOn(b, servicetest.New(b, service.Options{RecallRate: -1}))
}

// BenchmarkHostileDiff renders the diff of two 64 KiB versions.
func BenchmarkHostileDiff(b *testing.B) {
	u := newBenchUI(b)
	v1, v2 := hostileDiff()
	u.remember(b, u.writerKey, "big", v1)
	u.remember(b, u.writerKey, "big", v2)
	for _, cold := range []bool{true, false} {
		b.Run(map[bool]string{true: "cold", false: "cached"}[cold], func(b *testing.B) {
			benchPage(b, u, projPath+"/e/big?diff=1..2", cold)
		})
	}
}

// BenchmarkHostileQuotes renders an entry of 65,536 nested blockquotes.
func BenchmarkHostileQuotes(b *testing.B) {
	u := newBenchUI(b)
	u.remember(b, u.writerKey, "quotes", hostileQuotes())
	for _, cold := range []bool{true, false} {
		b.Run(map[bool]string{true: "cold", false: "cached"}[cold], func(b *testing.B) {
			benchPage(b, u, projPath+"/e/quotes", cold)
		})
	}
}
