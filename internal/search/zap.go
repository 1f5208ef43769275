package search

import zap "github.com/blevesearch/zapx/v17"

// zapx (v17, the segment format scorch writes) sizes the buffer of a new
// in-memory segment from the previous segment's bytes per document times
// (documents + 100). A refresh batch of one document then allocates about a
// hundred times its segment, and the segment keeps that whole buffer for as
// long as it lives: 32 refreshes of 64 KB entries held 470 bytes of heap per
// byte of text (120–150× on a real server: threat 2 of Stufe 5 in AUSBAUSTUFEN.md). Without the estimate
// the buffer grows by doubling, so a segment keeps at most about twice its
// size. TestRefreshSegmentsKeepNoSpareBuffer pins this.
func init() {
	zap.NewSegmentBufferAvgBytesPerDocFactor = 0
}
