package service

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"munin/internal/memory"
)

// Search-log buffering: recall appends a row in memory and returns; a
// flusher writes the rows in batches every flushEvery or when maxPending fill.
const (
	flushEvery = 200 * time.Millisecond
	maxPending = 512
	// maxBuffered bounds memory if the database stalls; rows beyond it are
	// dropped and counted (the search log is diagnostics, not memory).
	maxBuffered = 100_000
)

type searchLog struct {
	store Store
	log   *slog.Logger
	keep  retention

	// flushing is held from taking the pending rows until they are written,
	// so Flush also waits for a write the background flusher has begun.
	flushing sync.Mutex
	mu       sync.Mutex
	pending  []memory.SearchLogRow
	dropped  int64
	kick     chan struct{}
	done     chan struct{}
	stopped  chan struct{}
	// prune is the retention's bookkeeping (see retention.go).
	prune pruneState
}

func newSearchLog(store Store, log *slog.Logger, keep retention) *searchLog {
	l := &searchLog{
		store:   store,
		log:     log,
		keep:    keep,
		kick:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	go l.run()
	return l
}

func (l *searchLog) add(row memory.SearchLogRow) {
	l.mu.Lock()
	if len(l.pending) >= maxBuffered {
		l.dropped++
		l.mu.Unlock()
		return
	}
	l.pending = append(l.pending, row)
	full := len(l.pending) >= maxPending
	l.mu.Unlock()
	if full {
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
}

func (l *searchLog) run() {
	defer close(l.stopped)
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-l.kick:
		case <-l.done:
			l.flush()
			return
		}
		l.flush()
		l.maybePrune(time.Now())
	}
}

// flush writes everything pending; on failure the rows are logged as lost
// rather than retried forever (the search log must not stall recall).
func (l *searchLog) flush() {
	l.flushing.Lock()
	defer l.flushing.Unlock()
	l.mu.Lock()
	rows := l.pending
	l.pending = nil
	dropped := l.dropped
	l.dropped = 0
	l.mu.Unlock()
	if dropped > 0 {
		l.log.Warn("search log buffer full; rows dropped", "rows", dropped)
	}
	if len(rows) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.store.AppendSearchLog(ctx, rows); err != nil {
		l.log.Error("search log write failed", "rows", len(rows), "err", err)
		return
	}
	l.written(rows)
}

// Flush writes pending rows now; tests and shutdown use it.
func (l *searchLog) Flush() { l.flush() }

// Close flushes what is pending and stops the flusher.
func (l *searchLog) Close() error {
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	<-l.stopped
	return nil
}
