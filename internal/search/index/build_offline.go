package index

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// An offline build (BuildOffline: munin reindex, no server in the process)
// keeps the process's peak memory bounded where the server's build does not
// need to:
//
//   - It records no slug → version map (Project.versions): only the
//     refreshes after a build read it, and an offline build has none — the
//     command holds the data directory's lock. An index opened from disk
//     starts with an empty map just the same. At 1,000,000 entries the map
//     held 60–70 MiB of heap.
//   - Its merges make segments of fewer than offlineSegmentDocs documents
//     instead of one. A merge maps every source segment's file and reads all
//     of it, and the pages it read stay in the process's resident memory
//     until the merged segment replaces them: the final merge into one
//     segment at 1,000,000 entries held 335 MiB of them at the peak.
//
// At 1,000,000 entries (the load test's notes, 2 shared cores, load 8–15,
// 2026-12-04, paired runs at once) the peak resident memory (VmHWM) fell
// from 592 to 245 MiB and the CPU time from 450 to 419 s; the index ends
// in three segments instead of one (or two, when scorch's persister was
// late). A recall of a title's words cost 20–40 % more CPU over four such
// segments than over one; of a single frequent word, no difference beyond
// the noise.
var offline atomic.Bool

// offlineSegmentDocs caps the segments of an offline build: no merge makes
// one of this many documents or more, and one of half as many is not
// merged again (scorch's merge plan). So an index of up to half as many
// entries still ends as one segment, as the server builds it, and a larger
// one as a few: 1,000,000 entries of the load test's notes (300 bytes of
// index each) in three to four segments, none of which held the whole
// index's pages at once while it was merged. A var for the tests.
var offlineSegmentDocs int64 = 500_000

// buildConfig is the scorch configuration a build creates its index with:
// scorchConfig, and offline the cap on merged segments for scorch's merger.
func buildConfig(nap time.Duration) map[string]any {
	cfg := scorchConfig(nap)
	if offline.Load() {
		cfg["scorchMergePlanOptions"] = map[string]any{"MaxSegmentSize": offlineSegmentDocs}
	}
	return cfg
}

// mergeInSteps is the merge that ends an offline build: into segments
// below offlineSegmentDocs, one merge at a time. Scorch releases the source
// segments of a merge plan only once all of its merges are done, so a plan
// of three merges held the pages of the whole index (306 of 357 MiB at the
// peak, 1,000,000 entries); each plan here has one merge. It stops when no
// two segments are left that may be merged, or a step merged none.
func mergeInSteps(ctx context.Context, idx bleve.Index, s *scorch.Scorch) error {
	for {
		n, err := mergeable(s)
		if err != nil || n < 2 {
			return err
		}
		if err := s.ForceMerge(ctx, oneMergeOf(n)); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		WaitPersisted(idx) // the persister lets go of the merged segments
		if after, err := mergeable(s); err != nil || after >= n {
			return err
		}
	}
}

// oneMergeOf is the plan of one merge of up to ten of n mergeable segments,
// together fewer than offlineSegmentDocs documents.
func oneMergeOf(n int) *mergeplan.MergePlanOptions {
	o := mergeplan.SingleSegmentMergePlanOptions
	o.MaxSegmentSize = offlineSegmentDocs
	// The planner adds merges while the segments it leaves plus its merges
	// outnumber the budget: n-1 stops it after the first.
	o.CalcBudget = func(int64, int64, *mergeplan.MergePlanOptions) int { return n - 1 }
	return &o
}

// mergeable counts the segments the merges of an offline build may still
// merge: those written to disk with fewer than half offlineSegmentDocs
// documents (scorch's merge plan leaves larger ones as they are).
func mergeable(s *scorch.Scorch) (int, error) {
	r, err := s.Reader()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		return 0, nil
	}
	n := 0
	for _, seg := range snap.Segments() {
		if _, onDisk := seg.Segment().(segment.PersistedSegment); onDisk && seg.LiveSize() < offlineSegmentDocs/2 {
			n++
		}
	}
	return n, nil
}
