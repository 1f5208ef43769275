package mcpserver

import (
	"context"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"munin/internal/memory"
	"munin/internal/service"
)

// listNote stands for notifications/resources/list_changed in a list of
// notes; every other note is a URI for notifications/resources/updated.
const listNote = ""

// deliver runs on the hub's goroutine for each batch of changes of a
// project s watches: it must not block. It sends
// notifications/resources/updated for each subscribed entry that changed
// and for the project's URI if subscribed, and list_changed for a new slug
// (version 1) or a forget if s asked for it. Whatever cannot be sent now
// is added to s.pend, the resync marker.
func (r *subscriptions) deliver(s *subscriber, ref memory.ProjectRef, w *watched, ev service.WatchEvent) {
	r.mu.Lock()
	if s.gone || s.projects[ref] != w {
		r.mu.Unlock()
		return
	}
	var notes []string
	if ev.Resync {
		notes = r.projectNotesLocked(s, ref, w)
	} else {
		list := false
		for _, c := range ev.Changes {
			if _, ok := w.slugs[c.Slug]; ok {
				if u := entryURI(c.Project, c.Slug); !slices.Contains(notes, u) {
					notes = append(notes, u)
				}
			}
			if c.Version == 1 || c.Kind == "forget" {
				list = true
			}
		}
		if w.project && len(ev.Changes) > 0 {
			notes = append(notes, projectURI(ref.String()))
		}
		if list && s.listChanged {
			notes = append(notes, listNote)
		}
	}
	if len(notes) == 0 {
		r.mu.Unlock()
		return
	}
	// The stream may not carry anything yet, or the keys were not checked
	// for too long: all of it waits for the maintenance loop.
	if ev.Resync || !s.ready || r.now().Sub(s.checked) > subscribeKeyStale {
		r.pendLocked(s, notes)
		r.mu.Unlock()
		return
	}
	// Something is owed already (the channel was full: the maintenance
	// loop sends it) or paced (the pacer sends it): the notes join it.
	waiting := len(s.pend) > 0 || s.pendList
	r.pendLocked(s, notes)
	if waiting || !s.dueAt.IsZero() {
		r.mu.Unlock()
		return
	}
	if due := s.lastSent.Add(r.pace); due.After(r.now()) {
		s.dueAt = due
		r.paced[s] = struct{}{}
		r.wakePacerLocked()
		r.mu.Unlock()
		return
	}
	r.sendPendLocked(s)
}

// wakePacerLocked starts the pacer, or tells the running one that a round
// came due.
func (r *subscriptions) wakePacerLocked() {
	if !r.pacerRunning {
		r.pacerRunning = true
		go r.pacer()
		return
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// pacer sends each paced subscriber's round once it is due, one goroutine
// for all of them, and returns once none is paced.
func (r *subscriptions) pacer() {
	for {
		next, ok := r.pacedRound()
		if !ok {
			return
		}
		t := time.NewTimer(next)
		select {
		case <-t.C:
		case <-r.wake:
			t.Stop()
		}
	}
}

// round is what one subscriber is sent at once.
type round struct {
	s     *subscriber
	notes []string
}

// pacedRound sends the rounds that are due and says how long until the
// next; false once nothing is paced (the pacer has stopped).
func (r *subscriptions) pacedRound() (time.Duration, bool) {
	var jobs []round
	r.mu.Lock()
	now := r.now()
	next := time.Duration(-1)
	for s := range r.paced {
		if wait := s.dueAt.Sub(now); wait > 0 {
			if next < 0 || wait < next {
				next = wait
			}
			continue
		}
		delete(r.paced, s)
		s.dueAt = time.Time{}
		if !s.ready || now.Sub(s.checked) > subscribeKeyStale {
			continue // the maintenance loop sends it
		}
		jobs = append(jobs, round{s, r.takePendLocked(s)})
		s.lastSent = now
	}
	if next < 0 {
		r.pacerRunning = false
	}
	r.mu.Unlock()
	for _, j := range jobs {
		r.sendOwed(j.s, j.notes)
	}
	return next, next >= 0
}

// sendPendLocked takes what s is owed, releases mu and sends it.
func (r *subscriptions) sendPendLocked(s *subscriber) {
	notes := r.takePendLocked(s)
	s.lastSent = r.now()
	r.mu.Unlock()
	r.sendOwed(s, notes)
}

// sendOwed sends notes; what finds the channel full is owed again, for
// the maintenance loop. It reports whether all went out.
func (r *subscriptions) sendOwed(s *subscriber, notes []string) bool {
	n := r.send(s, notes)
	if n == len(notes) {
		return true
	}
	r.mu.Lock()
	if !s.gone {
		r.pendLocked(s, notes[n:])
	}
	r.mu.Unlock()
	return false
}

// takePendLocked empties what s is owed into the order it goes out in:
// the sorted URIs (a project's before its entries'), then list_changed.
func (r *subscriptions) takePendLocked(s *subscriber) []string {
	notes := make([]string, 0, len(s.pend)+1)
	for u := range s.pend {
		notes = append(notes, u)
	}
	slices.Sort(notes)
	if s.pendList {
		notes = append(notes, listNote)
	}
	clear(s.pend)
	s.pendList = false
	return notes
}

// projectNotesLocked is the resync marker for one project: every URI of
// it s subscribes to, and list_changed if s asked for it.
func (r *subscriptions) projectNotesLocked(s *subscriber, ref memory.ProjectRef, w *watched) []string {
	var notes []string
	if w.project {
		notes = append(notes, projectURI(ref.String()))
	}
	for slug := range w.slugs {
		notes = append(notes, entryURI(ref.String(), slug))
	}
	if s.listChanged {
		notes = append(notes, listNote)
	}
	return notes
}

// pendLocked adds notes to what s is owed (subscribed URIs only); a note
// already owed is coalesced into it.
func (r *subscriptions) pendLocked(s *subscriber, notes []string) {
	for _, n := range notes {
		if n == listNote {
			if s.pendList {
				r.coalesced.Add(1)
			}
			s.pendList = true
			continue
		}
		if _, ok := s.uris[n]; !ok {
			continue
		}
		if _, ok := s.pend[n]; ok {
			r.coalesced.Add(1)
		}
		s.pend[n] = struct{}{}
	}
}

// send delivers notes in order without blocking and returns how many went
// out: it stops at the first that finds the channel full (or the session
// gone).
func (r *subscriptions) send(s *subscriber, notes []string) int {
	for i, n := range notes {
		method, params := mcp.MethodNotificationResourceUpdated, map[string]any{"uri": n}
		if n == listNote {
			method, params = mcp.MethodNotificationResourcesListChanged, nil
		}
		if !r.sendOne(s, method, params) {
			r.overflowed.Add(1)
			s.overflows.Add(1)
			return i
		}
		r.sent.Add(1)
	}
	return len(notes)
}

func (r *subscriptions) sendOne(s *subscriber, method string, params map[string]any) bool {
	if s.sessionID != "" {
		// A 2025 session: mcp-go puts it on the session's GET stream (or an
		// in-flight POST's), and answers ErrNotificationChannelBlocked
		// instead of waiting when the 100 slots are full.
		return r.mcp.SendNotificationToSpecificClient(s.sessionID, method, params) == nil
	}
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{Method: method, Params: mcp.NotificationParams{AdditionalFields: params}}}
	if s.tag != nil {
		n.Params.Meta = map[string]any{mcp.MetaKeySubscriptionID: s.tag}
	}
	select {
	case s.ch <- n:
		return true
	default:
		return false
	}
}

// maintain runs while there are subscribers: every subscribeRetry it marks
// new listen streams ready, checks keys that are due and sends what is
// owed. It returns once the registry is empty; the next subscriber starts
// it again.
func (r *subscriptions) maintain() {
	t := time.NewTicker(r.every)
	defer t.Stop()
	for range t.C {
		if !r.tick() {
			return
		}
	}
}

// tick is one round of maintain; false once the registry is empty.
func (r *subscriptions) tick() bool {
	r.mu.Lock()
	if len(r.subs) == 0 {
		r.running = false
		r.mu.Unlock()
		return false
	}
	now := r.now()
	var due []*subscriber
	for _, s := range r.subs {
		// Seen by two rounds: at least one subscribeRetry after the hook
		// that registered it, so mcp-go has sent the acknowledgement.
		if !s.ready {
			s.ticks++
			s.ready = s.ticks >= 2
		}
		if now.Sub(s.checked) >= subscribeKeyCheck {
			due = append(due, s)
		}
	}
	r.mu.Unlock()
	r.checkKeys(due, now)
	r.resync()
	return true
}

// checkKeys looks up the keys of the subscribers in due (each key once)
// and drops every subscriber one of whose keys was revoked; the others are
// checked as of now. A lookup that fails otherwise (the control database
// is busy) leaves the subscriber unchecked: after subscribeKeyStale its
// deliveries wait, they are not sent unchecked.
func (r *subscriptions) checkKeys(due []*subscriber, now time.Time) {
	if len(due) == 0 {
		return
	}
	state := map[int64]keyState{}
	for _, s := range due {
		for _, k := range s.caller.Keys() {
			if _, ok := state[k.ID]; ok {
				continue
			}
			_, err := r.svc.KeyByID(context.Background(), k.ID)
			switch {
			case err == nil:
				state[k.ID] = keyValid
			case memory.ErrorCode(err) == memory.CodeUnauthorized:
				state[k.ID] = keyRevoked
			default:
				state[k.ID] = keyUnknown
			}
		}
	}
	var stops []func()
	r.mu.Lock()
	for _, s := range due {
		if s.gone {
			continue
		}
		worst := keyValid
		for _, k := range s.caller.Keys() {
			worst = max(worst, state[k.ID])
		}
		switch worst {
		case keyValid:
			s.checked = now
		case keyRevoked:
			stops = append(stops, r.dropLocked(s)...)
			r.revoked.Add(1)
		}
	}
	r.mu.Unlock()
	runAll(stops)
}

type keyState uint8

const (
	keyValid keyState = iota
	keyUnknown
	keyRevoked
)

// resync sends every subscriber what it is owed, as far as its channel
// takes it; the rest stays owed for the next round.
func (r *subscriptions) resync() {
	var jobs []round
	r.mu.Lock()
	now := r.now()
	for _, s := range r.subs {
		if (len(s.pend) == 0 && !s.pendList) || !s.dueAt.IsZero() || !s.ready || now.Sub(s.checked) > subscribeKeyStale {
			continue
		}
		jobs = append(jobs, round{s, r.takePendLocked(s)})
		s.lastSent = now
	}
	r.mu.Unlock()
	for _, j := range jobs {
		if r.sendOwed(j.s, j.notes) {
			r.resyncs.Add(1)
		}
	}
}
