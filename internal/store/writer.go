package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// writeFunc is one write, run inside the batch transaction (within its own
// savepoint). It must use tx without a caller context: interrupting a
// statement could roll back the whole batch, including its neighbours' writes.
type writeFunc func(tx *sql.Tx) (any, error)

// writeReq is a write waiting for the workspace's writer goroutine.
type writeReq struct {
	ctx context.Context
	fn  writeFunc
	res chan writeResp // buffered: the writer never blocks on a caller
}

// writeResp is the outcome of one write, sent after COMMIT returned.
type writeResp struct {
	val any
	err error
}

// idempotencyTTL is how long a retry with the same idempotency key returns
// the first result.
const idempotencyTTL = 24 * time.Hour

// workspace is an open workspace file with its writer goroutine.
type workspace struct {
	s    *Store
	name string
	pool *pool
	// id tells this open instance apart from earlier and later ones of the
	// same file (latestcache.go: a new writer starts with an empty cache).
	id uint64
	// cache is the store's latest-version cache, nil when it is off or its
	// triggers could not be installed (latestcache_ws.go).
	cache *latestCache

	queue chan *writeReq
	// sendMu lets Close close the queue without racing a sender: senders hold
	// it shared while they send, stop holds it exclusively to set closed.
	sendMu sync.RWMutex
	closed bool
	done   chan struct{}
	// acks carries committed batches to the acker goroutine when
	// Options.Cluster is set (see acker.go); nil otherwise.
	acks     chan ackBatch
	ackerEnd chan struct{}
	// confirmed is the last audit id of the file that is acknowledged: in
	// a cluster, confirmed by Cluster.AfterCommit (the replica holds it, so
	// a new owner restores it — invariant 5
	// (docs/architecture.md#invariant-5-acknowledged-writes-survive-a-crash));
	// on a single server, committed. The change feed ends there (feed.go)
	// and the commit signal follows it (commits.go): a reader never reads
	// a row its writer was not told about, so no cursor points past what a
	// failover keeps. It starts at the file's last audit id (what a file
	// holds when it opens is confirmed: a new owner restored it from the
	// replica), -1 if that read failed (the feed answers unavailable until
	// the first confirmed batch sets it), and only rises. Published by one
	// goroutine (publish), read by any.
	confirmed atomic.Int64

	lastCleanup time.Time // writer goroutine only
	// settings is the writer's copy of the project settings (settings.go):
	// writer goroutine only.
	settings settingsCache
}

func newWorkspace(s *Store, name string, p *pool) *workspace {
	ws := &workspace{
		s:     s,
		name:  name,
		pool:  p,
		id:    s.workspaceIDs.Add(1),
		queue: make(chan *writeReq, s.opts.MaxBatch*4),
		done:  make(chan struct{}),
	}
	ws.startLatestCache()
	ws.confirmed.Store(-1)
	var end sql.NullInt64
	if err := p.writer.QueryRow(`SELECT max(id) FROM audit_log`).Scan(&end); err != nil {
		s.log.Error("read the last audit id", "workspace", name, "err", err)
	} else {
		ws.confirmed.Store(end.Int64)
	}
	if s.opts.Cluster != nil {
		ws.acks = make(chan ackBatch, ackQueue)
		ws.ackerEnd = make(chan struct{})
		go ws.acker()
	}
	go ws.run()
	return ws
}

// submit queues fn for the writer and waits for its outcome. A ctx cancelled
// before the writer takes the write means the write is not applied; once
// taken, the write is carried out and submit reports the real outcome, so the
// caller never sees an error for a write that did commit.
func (ws *workspace) submit(ctx context.Context, fn writeFunc) (any, error) {
	req := &writeReq{ctx: ctx, fn: fn, res: make(chan writeResp, 1)}
	ws.sendMu.RLock()
	if ws.closed {
		ws.sendMu.RUnlock()
		return nil, errClosed
	}
	select {
	case ws.queue <- req:
	case <-ctx.Done():
		ws.sendMu.RUnlock()
		return nil, ctx.Err()
	}
	ws.sendMu.RUnlock()
	r := <-req.res
	return r.val, storageError(r.err)
}

// stop closes the queue and waits until the writer has committed everything
// that was queued before.
func (ws *workspace) stop() {
	ws.sendMu.Lock()
	if !ws.closed {
		ws.closed = true
		close(ws.queue)
	}
	ws.sendMu.Unlock()
	<-ws.done
	if ws.acks != nil {
		close(ws.acks) // the writer has stopped: nothing more is sent
		<-ws.ackerEnd
	}
}

// close stops the writer and closes the connections; Cluster.BeforeClose
// runs in between.
func (ws *workspace) close() error {
	ws.stop()
	ws.closeLatest()
	if cl := ws.s.opts.Cluster; cl != nil {
		cl.BeforeClose(ws.name)
	}
	return ws.pool.close()
}

// writerGather is how long the writer waits for more writes before a
// commit, when the previous batch showed that writers are concurrent. A
// commit costs about 200 µs of CPU (most of it the fsync of synchronous=FULL)
// whatever its size, so under load fewer, larger batches leave more CPU for
// the requests; a lone writer never waits.
const writerGather = 250 * time.Microsecond

// run is the writer goroutine: it takes the first waiting write plus whatever
// else is queued and commits them in one transaction (group commit). A batch
// forms from the writes that arrived while the previous one was committing,
// and, if that one held more than one write, from those arriving within
// writerGather.
func (ws *workspace) run() {
	defer close(ws.done)
	batch := make([]*writeReq, 0, ws.s.opts.MaxBatch)
	gather := time.NewTimer(writerGather)
	gather.Stop()
	last := 0
	for req := range ws.queue {
		batch = append(batch[:0], req)
		batch = ws.fill(batch, last > 1, gather)
		ws.commit(batch)
		last = len(batch)
		clear(batch) // drop references to finished requests
		ws.maybeCleanup()
	}
}

// fill adds queued writes to batch up to MaxBatch: those already waiting,
// and with wait set those arriving within writerGather.
func (ws *workspace) fill(batch []*writeReq, wait bool, gather *time.Timer) []*writeReq {
	// Since Go 1.23 a stopped timer never delivers a stale tick, so Stop
	// alone readies it for the next Reset.
	defer gather.Stop()
	var deadline <-chan time.Time // set once the queue first runs empty
	for len(batch) < ws.s.opts.MaxBatch {
		var r *writeReq
		var ok bool
		select {
		case r, ok = <-ws.queue:
		default:
			if !wait {
				return batch
			}
			if deadline == nil {
				gather.Reset(writerGather)
				deadline = gather.C
			}
			select {
			case r, ok = <-ws.queue:
			case <-deadline:
				return batch
			}
		}
		if !ok {
			return batch
		}
		batch = append(batch, r)
	}
	return batch
}

// commit runs one batch: BEGIN IMMEDIATE, the writes, COMMIT, and only then
// the answers. If a write fails, the batch is run again with each write in
// its own SAVEPOINT, so the failing one is rolled back alone and reported to
// its own caller (see applyAll). If the transaction as a whole
// fails, every caller of the batch gets the error: nothing is acknowledged
// that did not commit.
func (ws *workspace) commit(batch []*writeReq) {
	live := make([]*writeReq, 0, len(batch))
	for _, req := range batch {
		if err := req.ctx.Err(); err != nil {
			req.res <- writeResp{err: err}
			continue
		}
		live = append(live, req)
	}
	if len(live) == 0 {
		return
	}
	failAll := func(err error) {
		for _, req := range live {
			req.res <- writeResp{err: err}
		}
	}

	began := time.Now()
	tx, err := ws.pool.writer.BeginTx(context.Background(), nil)
	if err != nil {
		ws.s.log.Error("begin batch", "workspace", ws.name, "err", err)
		failAll(fmt.Errorf("begin batch: %w", err))
		return
	}
	results, ok, failed, _ := applyAll(tx, live, false)
	if failed {
		// A write failed with no savepoint around it, so its changes cannot
		// be undone alone: start over with one savepoint per write.
		ws.rollback(tx)
		if tx, err = ws.pool.writer.BeginTx(context.Background(), nil); err != nil {
			ws.s.log.Error("begin batch", "workspace", ws.name, "err", err)
			failAll(fmt.Errorf("begin batch: %w", err))
			return
		}
		var fatal error
		if results, ok, _, fatal = applyAll(tx, live, true); fatal != nil {
			ws.rollback(tx)
			ws.s.log.Error("batch aborted", "workspace", ws.name, "err", fatal)
			failAll(fmt.Errorf("batch aborted: %w", fatal))
			return
		}
	}
	// The batch's last audit id, read in its own transaction: the feed
	// shows it once the batch is acknowledged (publish). Ids are given out
	// by this single writer, so every audit row up to it is of this batch
	// or of an earlier one — invariant 1
	// (docs/architecture.md#invariant-1-one-writer-per-workspace).
	audit := int64(-1)
	if ok > 0 {
		var end sql.NullInt64
		if err := tx.QueryRow(`SELECT max(id) FROM audit_log`).Scan(&end); err != nil {
			ws.rollback(tx)
			ws.s.log.Error("batch's last audit id", "workspace", ws.name, "err", err)
			failAll(fmt.Errorf("batch's last audit id: %w", err))
			return
		}
		audit = end.Int64
	}
	touched, touchedAll := ws.batchTouched(tx)
	if hook := ws.s.hookBeforeCommit; hook != nil {
		hook()
	}
	if cl := ws.s.opts.Cluster; cl != nil {
		if err := cl.BeforeCommit(ws.name); err != nil {
			ws.rollback(tx)
			ws.s.log.Warn("batch refused before commit", "workspace", ws.name, "writes", len(live), "err", err)
			failAll(unacknowledged(err))
			return
		}
	}
	if err := tx.Commit(); err != nil {
		ws.settings.drop() // what the batch's setters cached may not have committed
		ws.invalidateLatest(nil, true)
		ws.s.log.Error("commit batch", "workspace", ws.name, "writes", len(live), "err", err)
		failAll(fmt.Errorf("commit batch: %w", err))
		return
	}
	// Before any caller of the batch is answered (here or by the acker).
	ws.invalidateLatest(touched, touchedAll)
	ws.s.batches.Add(1)
	ws.s.writes.Add(int64(ok))
	if obs := ws.s.opts.Observer; obs != nil {
		obs.Batch(len(live), time.Since(began))
	}
	if ws.acks != nil {
		// Acknowledged by the acker once the replica holds it; until then
		// neither the feed nor the commit signal shows it.
		ws.acks <- ackBatch{live: live, results: results, committed: time.Now(), audit: audit}
		return
	}
	// A single server acknowledges what committed: the feed shows it
	// before its callers are answered (one who reads the feed after
	// remember returned finds it), and the live readers are woken after.
	ws.publish(audit)
	for i, req := range live {
		req.res <- results[i]
	}
	ws.s.noteCommit(ws.name) // the change feed's live readers (commits.go)
}

// publish moves the feed's end (confirmed) to audit, the last audit id of
// batches just acknowledged (-1: they wrote no row it could read). It runs
// in the one goroutine that acknowledges: the writer on a single server,
// the acker in a cluster.
func (ws *workspace) publish(audit int64) {
	if audit > ws.confirmed.Load() {
		ws.confirmed.Store(audit)
	}
}

// rollback rolls a batch's transaction back and drops the writer's copy
// of the project settings, which a setter in the batch may have changed
// (settings.go): the next write reads them again from the file.
func (ws *workspace) rollback(tx *sql.Tx) {
	_ = tx.Rollback()
	ws.settings.drop()
}

// applyAll runs the writes of a batch in tx and returns their results and
// how many succeeded. With safe set, each write runs in its own savepoint and
// a failing one is rolled back alone (fatal: the savepoint machinery failed).
// Without it, writes run bare and the first failing one stops the batch
// (failed): the caller then rolls back and runs the batch again safely. Most
// batches have no failing write, and the two savepoint statements cost about
// half as much as the write itself; a batch with a failing write (a conflict,
// say) is paid twice.
func applyAll(tx *sql.Tx, live []*writeReq, safe bool) (results []writeResp, ok int, failed bool, fatal error) {
	results = make([]writeResp, len(live))
	for i, req := range live {
		var val any
		var err error
		if safe {
			if val, err, fatal = applyInSavepoint(tx, req.fn); fatal != nil {
				return nil, 0, false, fatal
			}
		} else if val, err = req.fn(tx); err != nil {
			return nil, 0, true, nil
		}
		results[i] = writeResp{val: val, err: err}
		if err == nil {
			ok++
		}
	}
	return results, ok, false, nil
}

// applyInSavepoint runs fn inside SAVEPOINT w. err is fn's own failure (its
// changes are rolled back, the batch goes on); fatal means the savepoint
// machinery itself failed and the transaction state is unknown.
func applyInSavepoint(tx *sql.Tx, fn writeFunc) (val any, err, fatal error) {
	if _, e := tx.Exec("SAVEPOINT w"); e != nil {
		return nil, nil, fmt.Errorf("savepoint: %w", e)
	}
	val, err = fn(tx)
	if err != nil {
		val = nil
		if _, e := tx.Exec("ROLLBACK TO w"); e != nil {
			// SQLite rolls the whole transaction back on some errors (a full
			// disk among them); the write's own error is the real cause.
			return nil, nil, fmt.Errorf("%w (then rollback to savepoint: %v)", err, e)
		}
	}
	if _, e := tx.Exec("RELEASE w"); e != nil {
		return nil, nil, fmt.Errorf("release savepoint: %w", e)
	}
	return val, err, nil
}

// maybeCleanup deletes expired idempotency keys about once an hour. It runs
// in the writer goroutine between batches, so it needs no locking and never
// competes with a batch for the writer connection.
func (ws *workspace) maybeCleanup() {
	now := time.Now()
	if now.Sub(ws.lastCleanup) < time.Hour {
		return
	}
	ws.lastCleanup = now
	cutoff := now.Add(-idempotencyTTL).UnixNano()
	if _, err := ws.pool.writer.Exec("DELETE FROM idempotency WHERE created_at < ?", cutoff); err != nil {
		ws.s.log.Warn("clean idempotency keys", "workspace", ws.name, "err", err)
	}
}
