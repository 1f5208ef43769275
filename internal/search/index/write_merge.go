package index

import (
	zap "github.com/blevesearch/zapx/v17"
)

// Merge write buffer. zapx writes every segment file it merges (the
// persister folding a second's refresh segments into one file, the merger
// folding files into tiers) through a bufio.Writer of
// zap.DefaultFileMergerBufferSize, 1 MiB by default, made anew for each
// merge: a large allocation that the runtime zeroes and later hands back to
// the kernel. Under the load test's mix (32 agents, 30 % remember: a few
// small merges a second, each a few hundred KB) that buffer alone was 3 % of
// the server's CPU, more than the merges' own work, and the page faults and
// madvise calls of its memory another 2 % (perf, 2026-12-04, issue 27).
// A merge of a large index (munin reindex at a million entries writes
// hundreds of MB) only makes more write calls with a smaller buffer: a few
// thousand, milliseconds against minutes.
//
// It is a package variable of zapx, read by every merge of the process: set
// in init, before any index of this package can open, so no merge reads it
// while it changes. TestMergeWriteBufferIsSmall pins it.
const mergeWriteBuffer = 64 << 10

func init() { zap.DefaultFileMergerBufferSize = mergeWriteBuffer }
