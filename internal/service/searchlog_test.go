package service

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
)

// gatedLogStore holds every search-log write until release is closed.
type gatedLogStore struct {
	Store
	started chan struct{} // receives when a write begins
	release chan struct{}
	rows    atomic.Int64
}

func (s *gatedLogStore) AppendSearchLog(_ context.Context, rows []memory.SearchLogRow) error {
	s.started <- struct{}{}
	<-s.release
	s.rows.Add(int64(len(rows)))
	return nil
}

// TestFlushWaitsForInFlightWrite: Flush called while the background flusher
// is writing returns only after those rows are in the store. It once found
// nothing pending and returned at once.
func TestFlushWaitsForInFlightWrite(t *testing.T) {
	st := &gatedLogStore{started: make(chan struct{}, 1), release: make(chan struct{})}
	l := newSearchLog(st, slog.New(slog.DiscardHandler), retention{})
	var once sync.Once
	releaseWrites := func() { once.Do(func() { close(st.release) }) }
	defer func() { releaseWrites(); l.Close() }()
	for range maxPending {
		l.add(memory.SearchLogRow{Query: "q"}) // a full buffer kicks the flusher
	}
	<-st.started // the background write has taken the rows

	flushed := make(chan struct{})
	go func() {
		l.Flush()
		close(flushed)
	}()
	select {
	case <-flushed:
		t.Fatalf("Flush returned while the background write was still running (%d rows stored)", st.rows.Load())
	case <-time.After(200 * time.Millisecond): // Flush is waiting, as it should
	}
	releaseWrites()
	<-flushed
	if n := st.rows.Load(); n != maxPending {
		t.Fatalf("after Flush %d of %d rows are stored", n, maxPending)
	}
}
