package store

import "time"

// ackQueue bounds the committed batches waiting for their acknowledgement;
// past it the writer waits before its next commit.
const ackQueue = 64

// ackBatch is a committed batch whose callers wait for Cluster.AfterCommit.
type ackBatch struct {
	live      []*writeReq
	results   []writeResp
	committed time.Time
	audit     int64 // the batch's last audit id (-1: not read, see commit)
}

// acker acknowledges committed batches when Options.Cluster is set (the
// replica must hold them first, see Cluster.AfterCommit). It runs beside the
// writer, so the next batch commits while the previous one replicates, and
// one AfterCommit covers every batch committed before it started: it takes
// all batches waiting (see collect), runs AfterCommit once, and answers
// them all: with their results, or all with its error.
//
// Only a confirmation publishes the batches' audit rows to the change feed
// (workspace.confirmed) and then wakes its live readers: a reader never
// sees a write before its caller could, and (with synchronous replication)
// no cursor points past what the replica holds, which a successor restores
// — invariant 5
// (docs/architecture.md#invariant-5-acknowledged-writes-survive-a-crash).
// A failed confirmation publishes nothing: its rows stay in the local file
// but out of the feed, until a later confirmation covers them (the replica
// copies the file in order, so it then holds them too) or the node gives
// the workspace up and its successor restores the replica without them.
func (ws *workspace) acker() {
	defer close(ws.ackerEnd)
	var pending []ackBatch
	var recent ackHistory
	gather := time.NewTimer(time.Hour)
	gather.Stop()
	for b := range ws.acks {
		pending = ws.collect(append(pending[:0], b), recent.most(), gather)
		err := ws.s.opts.Cluster.AfterCommit(ws.name)
		if err == nil {
			for _, p := range pending {
				ws.publish(p.audit)
			}
		}
		writes := 0
		for _, p := range pending {
			writes += len(p.live)
			for i, req := range p.live {
				if err != nil {
					req.res <- writeResp{err: unacknowledged(err)}
				} else {
					req.res <- p.results[i]
				}
			}
		}
		if err != nil {
			ws.s.log.Warn("writes not acknowledged", "workspace", ws.name, "batches", len(pending), "writes", writes, "err", err)
		} else {
			ws.s.noteCommit(ws.name) // the change feed's live readers (commits.go)
		}
		if obs := ws.s.opts.Observer; err == nil && obs != nil {
			obs.ReplicaAck(writes, time.Since(pending[0].committed))
		}
		recent.add(writes)
		clear(pending)
	}
}

// ackHistory holds how many writes each of the last confirmations covered.
type ackHistory struct {
	writes [16]int
	next   int
}

func (h *ackHistory) add(writes int) {
	h.writes[h.next%len(h.writes)] = writes
	h.next++
}

// most is the most writes one of the last confirmations covered (1 before
// the first).
func (h *ackHistory) most() int {
	m := 1
	for _, w := range h.writes {
		m = max(m, w)
	}
	return m
}

// collect adds every batch already waiting to pending and then, while they
// hold fewer than expect writes, those committed within Options.AckGather.
// A replication costs the replicator a few ms of CPU whatever its size, and
// writers that came together lately come together again: under load one
// confirmation covers them all (AUSBAUSTUFEN.md, stage 8), while a lone
// writer (expect 1) never waits.
func (ws *workspace) collect(pending []ackBatch, expect int, gather *time.Timer) []ackBatch {
	n := 0
	for _, p := range pending {
		n += len(p.live)
	}
	waiting := false
	defer gather.Stop()
	for {
		select {
		case more, ok := <-ws.acks:
			if !ok {
				return pending
			}
			pending, n = append(pending, more), n+len(more.live)
			continue
		default:
		}
		if n >= expect || ws.s.opts.AckGather <= 0 {
			return pending
		}
		if !waiting {
			gather.Reset(ws.s.opts.AckGather) // Go 1.23+: a stopped timer delivers no stale tick
			waiting = true
		}
		select {
		case more, ok := <-ws.acks:
			if !ok {
				return pending
			}
			pending, n = append(pending, more), n+len(more.live)
		case <-gather.C:
			return pending
		}
	}
}
