//go:build last

package lasttest

import (
	"slices"
	"testing"
	"time"
)

// TestAlign pins how a subscriber's updates are matched to the hub's
// batches: one to one when the counts agree, by time when updates were
// collapsed, and a batch after the last update is missed.
func TestAlign(t *testing.T) {
	ms := int64(time.Millisecond)
	batches := func(at ...int64) []stapel {
		var out []stapel
		for _, a := range at {
			out = append(out, stapel{at: a * ms})
		}
		return out
	}
	times := func(at ...int64) []int64 {
		var out []int64
		for _, a := range at {
			out = append(out, a*ms)
		}
		return out
	}
	for _, c := range []struct {
		name    string
		batches []stapel
		got     []int64
		want    []int
		exact   bool
	}{
		{"one update per batch", batches(100, 200, 300), times(101, 199, 305), []int{0, 1, 2}, true},
		{"two batches collapsed into one late update", batches(100, 200, 300), times(101, 1300), []int{0, 1, 1}, false},
		{"nothing after the first batch", batches(100, 200, 300), times(101), []int{0, -1, -1}, false},
		{"an update too early for any batch is skipped", batches(100, 200), times(10, 101, 201), []int{1, 2}, false},
		{"within skew before the test's watcher", batches(100, 200), times(60), []int{0, -1}, false},
		{"no batches", nil, times(5), []int{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			idx, exact := align(c.batches, c.got)
			if !slices.Equal(idx, c.want) || exact != c.exact {
				t.Errorf("align = %v, %v; want %v, %v", idx, exact, c.want, c.exact)
			}
		})
	}
}
