package changestream

import (
	"slices"
	"testing"
	"time"
)

// TestBurstCostsOneReadPerPage: a burst of changes committed at once costs
// the stream one feed read per page, whatever the number of changes in it
// (the feed gives the cursor after each change with the page), and every
// event still carries the cursor after its change.
func TestBurstCostsOneReadPerPage(t *testing.T) {
	for _, tc := range []struct {
		burst, pageSize, wantReads int
	}{
		{burst: 50, pageSize: 100, wantReads: 1},
		{burst: 1, pageSize: 100, wantReads: 1},
		{burst: 5, pageSize: 2, wantReads: 3}, // pages of 2, 2 and 1
	} {
		feed := newFakeFeed()
		s := New(feed, Options{Heartbeat: time.Hour, Poll: -1, PageSize: tc.pageSize})
		c := open(t, serveStreams(t, s).URL)
		c.must() // the start cursor: the stream's first read is done
		feed.mu.Lock()
		before := feed.reads
		feed.mu.Unlock()
		feed.add(seq("b/", 1, tc.burst)...)
		ids, slugs := c.changes(tc.burst)
		if !slices.Equal(ids, seq("c", 1, tc.burst)) || !slices.Equal(slugs, seq("b/", 1, tc.burst)) {
			t.Fatalf("burst of %d: ids %v slugs %v", tc.burst, ids, slugs)
		}
		feed.mu.Lock()
		reads := feed.reads - before
		feed.mu.Unlock()
		t.Logf("a burst of %d changes in pages of %d: %d feed reads", tc.burst, tc.pageSize, reads)
		if reads != tc.wantReads {
			t.Errorf("a burst of %d changes in pages of %d cost %d feed reads, want %d", tc.burst, tc.pageSize, reads, tc.wantReads)
		}
		c.close()
	}
}
