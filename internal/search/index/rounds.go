package index

import (
	"context"
	"fmt"
	"time"
)

// Refresh rounds: the group commit of the index. Writers queue slugs into
// the collecting round; one drain goroutine per project applies the rounds
// in order, each as one bleve batch; searches wait for the rounds queued
// before them (settle).

// round is one refresh batch being collected: its slugs, and the result
// every caller in it waits for.
type round struct {
	slugs  map[string]struct{}
	writes int       // refreshes queued into it, repeats of a slug included
	queued time.Time // when its first slug was queued (the refresh lag)
	// hurry is closed when a search waits for the round: gathering stops
	// and the batch is applied at once. hurried (under qmu) closes it once.
	hurry   chan struct{}
	hurried bool
	done    chan struct{}
	err     error
}

// Queue makes the index agree with the database after a write of slug,
// without waiting: the next refresh batch rereads every change of the
// project since the mark the index reflects. Every search (Ready) that
// starts after Queue returned waits for that batch first.
func (p *Project) Queue(slug string) { p.queue(slug) }

// queue adds slug to the next batch and returns that batch. This is group
// commit: while one batch is applied (or the index is built), every refresh
// that arrives joins the next batch, which is applied as one bleve batch.
func (p *Project) queue(slug string) *round {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	if p.collecting == nil {
		p.collecting = &round{slugs: make(map[string]struct{}), queued: time.Now(), hurry: make(chan struct{}), done: make(chan struct{})}
	}
	rd := p.collecting
	rd.slugs[slug] = struct{}{}
	rd.writes++
	if !p.draining {
		// The batch runs in its own goroutine, not in a caller's: it serves
		// all callers in the round, so one caller's cancellation must not
		// abandon the others.
		p.draining = true
		go p.drain()
	}
	return rd
}

// Refresh queues slug and waits until a batch that read it after this call
// has been applied; its error is the batch's. If ctx ends first, Refresh
// returns its error but the refresh is still applied.
func (p *Project) Refresh(ctx context.Context, slug string) error {
	rd := p.queue(slug)
	select {
	case <-rd.done:
		return rd.err
	case <-ctx.Done():
		return fmt.Errorf("refresh %s in %s: %w", slug, p.ref, ctx.Err())
	}
}

// settle waits until every refresh queued before the call has been applied:
// the batch still collecting, or else the one being applied. Batches are
// applied in order, so waiting for the newest covers all earlier ones. A
// failed batch left no index open (see drain), so the search that follows
// opens it again, caught up with the Source, and cannot see a stale state.
func (p *Project) settle(ctx context.Context) error {
	p.qmu.Lock()
	rd := p.collecting
	if rd == nil {
		rd = p.applying
	} else if !rd.hurried {
		rd.hurried = true
		close(rd.hurry)
	}
	p.qmu.Unlock()
	if rd == nil || isClosed(rd.done) {
		return nil
	}
	select {
	case <-rd.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("search %s: wait for pending writes: %w", p.ref, ctx.Err())
	}
}

// drain applies queued rounds one after the other until none is left.
func (p *Project) drain() {
	for {
		p.mu.Lock()
		p.gather()
		p.qmu.Lock()
		rd := p.collecting
		p.collecting, p.applying = nil, rd
		if rd == nil {
			p.draining = false
			p.qmu.Unlock()
			p.mu.Unlock()
			return
		}
		p.qmu.Unlock()

		// A closed index needs no work: opening it catches up with every
		// change, this round's included.
		if idx := p.Current(); idx != nil {
			rd.err = p.applyLocked(idx)
			if rd.err != nil {
				// The index may now miss this batch's writes. Nobody waits on
				// a refresh any more (remember returns once queued), so close
				// it: the next search opens it again and catches up. A batch
				// cut off by Close is no failure worth an error line.
				if p.cfg.Base.Err() == nil {
					p.cfg.Logger.Error("search: refresh batch failed; index dropped", "project", p.ref.String(), "slugs", len(rd.slugs), "err", rd.err)
				}
				p.dropLocked()
			} else {
				p.cfg.Counters.Batches.Add(1)
				p.cfg.Counters.Refreshes.Add(int64(len(rd.slugs)))
				if on := p.cfg.OnRefresh; on != nil {
					on(time.Since(rd.queued))
				}
			}
		}
		p.lastRound = len(rd.slugs)
		close(rd.done) // waiters go on
		p.qmu.Lock()
		p.applying = nil
		p.qmu.Unlock()
		p.mu.Unlock()
	}
}

// Gathering. A bleve batch costs a new segment whatever its size, so one
// batch of ten slugs is far cheaper than ten batches of one. Writers do not
// wait for the index (they queue), only searches do. So when the last round
// held more than one slug (writes arrive concurrently), the next round is
// given up to gatherTicks short ticks to grow; it goes as soon as a tick adds
// nothing (no write at all: repeated writes to a slug already in the round
// count, since they show writers are still busy), it holds gatherEnough
// slugs, or a search waits for it (hurry). A lone writer's round never waits.
const (
	gatherTick   = 500 * time.Microsecond
	gatherTicks  = 10
	gatherEnough = 256
)

// gather waits while the collecting round still grows (see gatherTick). p.mu is held.
func (p *Project) gather() {
	if p.lastRound < 2 {
		return
	}
	rd, slugs, writes := p.collectingRound()
	for range gatherTicks {
		if rd == nil || slugs >= gatherEnough {
			return
		}
		select {
		case <-rd.hurry:
			return
		case <-time.After(gatherTick):
		}
		var now int
		_, slugs, now = p.collectingRound()
		if now == writes {
			return
		}
		writes = now
	}
}

// collectingRound is the round waiting for the next batch, its slug count
// and the refreshes queued into it.
func (p *Project) collectingRound() (rd *round, slugs, writes int) {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	if p.collecting == nil {
		return nil, 0, 0
	}
	return p.collecting, len(p.collecting.slugs), p.collecting.writes
}

// isClosed reports whether done is closed already. Checked before a select
// that also waits for a deadline: when both are ready, select picks one at
// random, and work that is done must not be answered as given up.
func isClosed(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}
