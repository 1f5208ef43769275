package changehub

import (
	"context"
	"time"

	"munin/internal/memory"
)

// maxPagesPerWake bounds the pages one wake reads before the reader looks
// at its signals again (a large import is read in several turns).
const maxPagesPerWake = 16

// position is where a reader is in its workspace's feed: after the audit
// row after (whose time is stamp) of the file identity. Unknown until the
// start read succeeded, and again after the file was replaced.
type position struct {
	known        bool
	identity     string
	after, stamp int64
}

// read is a workspace's reader: it listens to the commit signal before it
// reads the feed's end, so no commit between the two goes unheard, and
// then reads on after every signal, poll tick or retry, until the last
// watcher leaves.
func (h *Hub) read(sp *space) {
	stopSignal := h.src.OnCommit([]string{sp.name}, func() { sp.nudge() })
	defer stopSignal()
	var pos position
	failed := !h.anchor(sp, &pos)
	close(sp.ready)
	var poll <-chan time.Time
	if h.opts.Poll > 0 {
		t := time.NewTicker(h.opts.Poll)
		defer t.Stop()
		poll = t.C
	}
	var retry <-chan time.Time
	if failed {
		retry = time.After(h.opts.Retry)
	}
	for {
		select {
		case <-sp.done:
			return
		case <-sp.wake:
		case <-poll:
		case <-retry:
		}
		retry = nil
		if !h.catchUp(sp, &pos) {
			retry = time.After(h.opts.Retry)
		}
	}
}

// nudge asks the reader to read again; one waiting nudge is enough.
func (sp *space) nudge() {
	select {
	case sp.wake <- struct{}{}:
	default:
	}
}

// query is a feed query of the watched projects from pos. Every row is
// read (Private false): what a watcher may see is its caller's filter.
func (h *Hub) query(sp *space, pos position) (memory.FeedQuery, bool) {
	projects := h.projects(sp)
	if len(projects) == 0 {
		return memory.FeedQuery{}, false
	}
	q := memory.FeedQuery{Identity: pos.identity, After: pos.after, Stamp: pos.stamp, Limit: h.opts.PageSize}
	for _, p := range projects {
		q.Projects = append(q.Projects, memory.FeedProject{Project: p})
	}
	return q, true
}

// feedRead is one bounded read.
func (h *Hub) feedRead(sp *space, q memory.FeedQuery) (memory.FeedPage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), h.opts.ReadTimeout)
	defer cancel()
	return h.src.FeedRead(ctx, sp.name, q)
}

// anchor reads the feed's end and starts pos there (the start position, or
// a new one after the file was replaced); false if the read failed.
func (h *Hub) anchor(sp *space, pos *position) bool {
	q, ok := h.query(sp, position{})
	if !ok {
		return true
	}
	q.EndOnly = true
	page, err := h.feedRead(sp, q)
	if err != nil {
		h.opts.Logger.Warn("change hub: cannot read the feed's end; retrying", "workspace", sp.name, "err", err)
		return false
	}
	*pos = position{known: true, identity: page.Identity, after: page.EndID, stamp: page.EndStamp}
	return true
}

// catchUp reads the rows after pos and hands them out, a few pages at a
// time (then it nudges itself to read on); false if a read failed and
// should be retried. A replaced file (the position expired) restarts at
// the new file's end and tells every watcher to resync; so does a reader
// whose start read failed, since rows may have been committed meanwhile.
func (h *Hub) catchUp(sp *space, pos *position) bool {
	if !pos.known {
		if !h.anchor(sp, pos) {
			return false
		}
		h.resync(sp)
		return true
	}
	for range maxPagesPerWake {
		q, ok := h.query(sp, *pos)
		if !ok {
			return true
		}
		page, err := h.feedRead(sp, q)
		if memory.ErrorCode(err) == memory.CodeInvalid {
			h.opts.Logger.Warn("change hub: the workspace's file was replaced; watchers resync", "workspace", sp.name, "err", err)
			pos.known = false
			return h.catchUp(sp, pos)
		}
		if err != nil {
			h.opts.Logger.Warn("change hub: feed read failed; retrying", "workspace", sp.name, "err", err)
			return false
		}
		h.dispatch(sp, page.Rows)
		pos.identity = page.Identity
		if page.Complete {
			if page.EndID > 0 {
				pos.after, pos.stamp = page.EndID, page.EndStamp
			}
			return true
		}
		last := page.Rows[len(page.Rows)-1]
		pos.after, pos.stamp = last.ID, last.At.UnixNano()
	}
	sp.nudge()
	return true
}

// dispatch hands the rows of each project, in commit order, to its
// watchers.
func (h *Hub) dispatch(sp *space, rows []memory.FeedRow) {
	var order []string
	byProject := map[string][]memory.FeedRow{}
	for _, r := range rows {
		if _, seen := byProject[r.Project]; !seen {
			order = append(order, r.Project)
		}
		byProject[r.Project] = append(byProject[r.Project], r)
	}
	for _, p := range order {
		ev := Event{Rows: byProject[p], memo: &memo{}}
		for _, w := range h.watchersOf(sp, p) {
			w.call(ev)
		}
	}
}

// resync tells every watcher of sp that rows may have been missed.
func (h *Hub) resync(sp *space) {
	for _, w := range h.everyWatcher(sp) {
		w.call(Event{Resync: true})
	}
}
