package index

import (
	"fmt"
	"sync"

	"github.com/blevesearch/bleve/v2"

	"munin/internal/memory"
)

// DefaultBatchBytes is the default of Config.BatchBytes.
const DefaultBatchBytes = 1 << 20

// sizedBatch is a bleve batch that applies itself whenever it holds
// Config.BatchBytes of text (or, in a build, Config.BuildBatch documents).
// Scorch analyzes every document of a batch before it builds the batch's
// segment and holds all the analyses until then: one refresh round of 255
// entries of 64 KB random words (a write key's hourly byte budget, 16 MiB)
// peaked at 686 MiB of live heap in one batch, 231 MiB in batches of 1 MiB,
// for an index that keeps 125 MiB. The price is a segment per BatchBytes
// instead of one per round or build batch (about 20 µs per segment and
// search), and a search may see part of a round applied.
// TestLargeBatchPeakHeap pins the peak.
type sizedBatch struct {
	idx      bleve.Index
	b        *bleve.Batch
	bytes    int
	maxBytes int
	maxDocs  int // 0: no limit
	// applied is set once part of the batch is in the index; flushes
	// counts the parts (each a segment).
	applied bool
	flushes int
	// async, when set, applies full batches in goroutines, at most
	// cap(async) at a time, while the caller fills the next (see
	// applyAsync); wait collects them.
	async    chan struct{}
	inFlight sync.WaitGroup
	asyncMu  sync.Mutex
	asyncErr error
}

// newSizedBatch returns an empty batch for idx of at most maxBytes of text
// and, unless maxDocs is 0, maxDocs documents.
func newSizedBatch(idx bleve.Index, maxBytes, maxDocs int) *sizedBatch {
	return &sizedBatch{idx: idx, b: idx.NewBatch(), maxBytes: maxBytes, maxDocs: maxDocs}
}

// index adds v's document and applies the batch if it is now full.
func (s *sizedBatch) index(v memory.Version) error {
	if err := s.b.Index(v.Slug, docFor(v)); err != nil {
		return fmt.Errorf("index %s: %w", v.Slug, err)
	}
	s.bytes += textBytes(v)
	if s.bytes >= s.maxBytes || (s.maxDocs > 0 && s.b.Size() >= s.maxDocs) {
		return s.flush()
	}
	return nil
}

// setMark records in the batch the change the index reflects once the
// batch is applied (see disk.go).
func (s *sizedBatch) setMark(m memory.Mark) {
	s.b.SetInternal(MarkKey, encodeMark(m))
}

// delete removes slug's document.
func (s *sizedBatch) delete(slug string) {
	s.b.Delete(slug)
}

// applyAsync makes flush hand full batches to up to n goroutines (n > 0):
// a build then analyzes and writes the segments of n batches at once, on n
// cores, instead of one after the other. Only for batches whose documents
// are all distinct and new (a build), so the order they land in does not
// matter; the batch that records the mark is applied after wait.
func (s *sizedBatch) applyAsync(n int) {
	s.async = make(chan struct{}, n)
}

// wait waits until every batch handed off is applied, returns the first
// error of any, and makes flush apply synchronously again.
func (s *sizedBatch) wait() error {
	s.inFlight.Wait()
	s.async = nil
	s.asyncMu.Lock()
	defer s.asyncMu.Unlock()
	return s.asyncErr
}

// flush applies what the batch holds, if anything.
func (s *sizedBatch) flush() error {
	if s.b.Size() == 0 {
		return nil
	}
	s.applied = true
	s.flushes++
	if s.async != nil {
		return s.handOff()
	}
	if err := s.idx.Batch(s.b); err != nil {
		return fmt.Errorf("index batch: %w", err)
	}
	// A new batch, never Reset: scorch's Batch returns once every document
	// is analyzed, but the goroutine that queued them may still be ranging
	// over the batch's map (bleve v2.6.3, index/scorch/scorch.go:543), so
	// clearing that map races with it (TestChangeDuringBuildIsNotLost under
	// -race found it).
	s.b = s.idx.NewBatch()
	s.bytes = 0
	return nil
}

// textBytes is the text of v that the index analyzes.
func textBytes(v memory.Version) int {
	n := len(v.Slug) + len(v.Title) + len(v.Content)
	for _, t := range v.Tags {
		n += len(t)
	}
	return n
}

// handOff applies the batch in a goroutine once one of the async slots is
// free, and starts a new batch; it returns the error of an earlier batch,
// if one failed, so the caller stops early.
func (s *sizedBatch) handOff() error {
	s.async <- struct{}{}
	s.inFlight.Add(1)
	go func(b *bleve.Batch, slots chan struct{}) {
		defer s.inFlight.Done()
		defer func() { <-slots }()
		if err := s.idx.Batch(b); err != nil {
			s.asyncMu.Lock()
			if s.asyncErr == nil {
				s.asyncErr = fmt.Errorf("index batch: %w", err)
			}
			s.asyncMu.Unlock()
		}
	}(s.b, s.async)
	s.b = s.idx.NewBatch()
	s.bytes = 0
	s.asyncMu.Lock()
	defer s.asyncMu.Unlock()
	return s.asyncErr
}
