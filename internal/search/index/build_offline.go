package index

import (
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
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

// finalMergeOptions is the plan of the merge that ends a build: into one
// segment (nil, scorch's single-segment plan), offline into segments below
// offlineSegmentDocs.
func finalMergeOptions() *mergeplan.MergePlanOptions {
	if !offline.Load() {
		return nil
	}
	o := mergeplan.SingleSegmentMergePlanOptions
	o.MaxSegmentSize = offlineSegmentDocs
	return &o
}
