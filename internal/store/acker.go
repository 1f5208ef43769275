package store

import "time"

// ackQueue bounds the committed batches waiting for their acknowledgement;
// past it the writer waits before its next commit.
const ackQueue = 64

// ackBatch is a committed batch whose callers wait for Options.AfterCommit.
type ackBatch struct {
	live      []*writeReq
	results   []writeResp
	committed time.Time
}

// acker acknowledges committed batches when Options.AfterCommit is set
// (cluster mode: the replica must hold them first). It runs beside the
// writer, so the next batch commits while the previous one replicates, and
// one AfterCommit covers every batch committed before it started: it takes
// all batches waiting — and those arriving within Options.AckGather —,
// runs AfterCommit once, and answers them all: with their results, or all
// with its error.
func (ws *workspace) acker() {
	defer close(ws.ackerEnd)
	var pending []ackBatch
	gather := time.NewTimer(time.Hour)
	gather.Stop()
	for b := range ws.acks {
		pending = append(pending[:0], b)
		gather.Reset(ws.s.opts.AckGather) // Go 1.23+: a stopped timer delivers no stale tick
	drain:
		for {
			select {
			case more, ok := <-ws.acks:
				if !ok {
					break drain
				}
				pending = append(pending, more)
			case <-gather.C:
				break drain
			}
		}
		gather.Stop()
		err := ws.s.opts.AfterCommit(ws.name)
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
		} else if on := ws.s.opts.OnAck; on != nil {
			on(writes, time.Since(pending[0].committed))
		}
		clear(pending)
	}
}
