//go:build cluster

// The verdict on what each MCP subscriber (mcp_sub.go) heard. The truth is
// the change feed, read after the writers stopped with the subscriber's
// own keys: every version (remember, import, approve) and forget of its
// projects, each with its commit time ("at", the owner's clock on this
// machine). Proposals and rejections change no resource and are not in
// the truth: a read key does not see them, and the subscriptions never
// send them.
//
// A change must have been heard if it was committed inside a window — at
// or after its project's resources/subscribe was answered in a session
// and before that session's stream ended: then an update of its project's
// URI must have arrived in that session at or after its commit. A resource
// URI cannot say which change it stands for, and the server sends one
// update per batch the change hub read, so this is the sharpest check that
// needs no knowledge of the batches: a missed change goes unnoticed only if
// an update for a later change of the project came after it. The server's
// resync marker (an update of every subscribed URI, subscribe_deliver.go)
// arrives after what it stands for and so counts as heard, as it should: a
// client that re-reads on each update re-reads after it.
//
// Not expected are changes committed before the first window. Excused, and
// counted as such, are changes committed in a gap between two sessions, and changes committed less than mcpGapLead before a session
// broke (killed node, 404, paused node) that no update covered: the dead
// node's hub had not read them yet. A subscriber that must not lose them
// reads the change feed from its cursor after a reconnect; the feed
// subscribers check that path (feed_check.go).

package clustertest

import (
	"fmt"
	"slices"
	"time"
)

// mcpGapLead: a change committed this shortly before its session broke may
// not have been read by the node's change hub yet (it reads other nodes'
// workspaces once a second, feed reads take a while under load).
const mcpGapLead = 3 * time.Second

// mcpVerdict is what the check found for one subscriber.
type mcpVerdict struct {
	name     string
	changes  int // versions and forgets of its projects in the feed
	inWindow int // committed in a window
	notified int // of those, followed by an update in their window
	// heardOther: of those, the ones whose first update after them came
	// through a node that did not own their workspace.
	heardOther int
	missing    int // in a window, not excused, no update after it
	open       int // of missing, in a window still open (the final wait)
	before     int // committed before the project's first window (or with none)
	gap        int // committed between windows
	tail       int // committed less than mcpGapLead before a break, not heard: excused
	notes      int // updates received
	foreign    int // updates of a URI not subscribed
	nonOwner   int // updates through a node that did not own the workspace
	viaOwner   int // updates through its owner
	// delays: for each heard change, commit → the first update of its
	// project at or after the commit; ackDelays: its acknowledgement → that
	// update (negative: the update came before the writer had its answer).
	// otherDelays: delays of the changes heard through a non-owner, whose
	// hub reads the owner's feed once a second.
	delays, ackDelays, otherDelays []time.Duration
	problems                       []string
}

func (v *mcpVerdict) problem(format string, args ...any) {
	if len(v.problems) < maxProblems {
		v.problems = append(v.problems, fmt.Sprintf(format, args...))
	}
}

// resourceChange reports whether a change of this kind changes a resource.
func resourceChange(kind string) bool {
	switch kind {
	case "remember", "import", "approve", "forget":
		return true
	}
	return false
}

// windowOf is the index of the window in which project had been subscribed
// at, or -1.
func windowOf(windows []mcpWindow, project string, at time.Time) int {
	for i, w := range windows {
		start, ok := w.start[project]
		if ok && !at.Before(start) && (w.end.IsZero() || at.Before(w.end)) {
			return i
		}
	}
	return -1
}

// firstStart is when project was first subscribed.
func firstStart(windows []mcpWindow, project string) (time.Time, bool) {
	for _, w := range windows {
		if start, ok := w.start[project]; ok {
			return start, true
		}
	}
	return time.Time{}, false
}

// gaps are the times between one window's end and the next one's first
// subscription.
func gaps(windows []mcpWindow) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(windows); i++ {
		prev, w := windows[i-1], windows[i]
		var first time.Time
		for _, start := range w.start {
			if first.IsZero() || start.Before(first) {
				first = start
			}
		}
		if !prev.end.IsZero() && !first.IsZero() {
			out = append(out, first.Sub(prev.end))
		}
	}
	return out
}

// excusable reports whether a window ended in a way that may have lost
// what its node's hub had not yet read.
func excusable(cause string) bool {
	return cause == endStream || cause == endGone || cause == endPaused
}

// checkMCP checks a subscriber's windows and updates against the feed's
// changes of its projects; acked maps versionKey → when its writer got the
// answer.
func checkMCP(name string, windows []mcpWindow, notes []mcpNote, changes []feedChange, projects []string, acked map[string]time.Time) *mcpVerdict {
	v := &mcpVerdict{name: name, notes: len(notes)}
	type slot struct {
		window  int
		project string
	}
	heard := map[slot][]mcpNote{}
	for _, n := range notes {
		if n.project == "" {
			v.foreign++
			continue
		}
		switch n.via {
		case viaOther:
			v.nonOwner++
		case viaOwner:
			v.viaOwner++
		}
		heard[slot{n.window, n.project}] = append(heard[slot{n.window, n.project}], n)
	}
	for _, ns := range heard {
		slices.SortFunc(ns, func(a, b mcpNote) int { return a.at.Compare(b.at) })
	}
	if v.foreign > 0 {
		v.problem("%s: %d Benachrichtigungen für nicht abonnierte URIs", name, v.foreign)
	}
	subscribed := map[string]bool{}
	for _, p := range projects {
		subscribed[p] = true
	}
	for _, ch := range changes {
		if !subscribed[ch.Project] || !resourceChange(ch.Kind) {
			continue
		}
		v.changes++
		i := windowOf(windows, ch.Project, ch.At)
		if i < 0 {
			if first, ok := firstStart(windows, ch.Project); ok && ch.At.After(first) {
				v.gap++
			} else {
				v.before++
			}
			continue
		}
		v.inWindow++
		w := windows[i]
		ns := heard[slot{i, ch.Project}]
		j, _ := slices.BinarySearchFunc(ns, ch.At, func(n mcpNote, at time.Time) int { return n.at.Compare(at) })
		switch {
		case j < len(ns):
			v.notified++
			v.delays = append(v.delays, ns[j].at.Sub(ch.At))
			if ns[j].via == viaOther {
				v.heardOther++
				v.otherDelays = append(v.otherDelays, ns[j].at.Sub(ch.At))
			}
			if done, ok := acked[versionKey(ch.Project, ch.Slug, ch.Version)]; ok {
				v.ackDelays = append(v.ackDelays, ns[j].at.Sub(done))
			}
		case !w.end.IsZero() && excusable(w.cause) && w.end.Sub(ch.At) < mcpGapLead:
			v.tail++
		default:
			v.missing++
			if w.end.IsZero() {
				v.open++
			}
			v.problem("%s: %s %s %s v%d (Commit %s) in Sitzung %d über n%d (abonniert %s, Ende %s %s): keine Benachrichtigung danach",
				name, ch.Kind, ch.Project, ch.Slug, ch.Version, clock(ch.At), i+1, w.node, clock(w.start[ch.Project]), clock(w.end), w.cause)
		}
	}
	return v
}

// clock is a time of day to the millisecond ("offen" for zero: a window
// not ended).
func clock(t time.Time) string {
	if t.IsZero() {
		return "offen"
	}
	return t.Format("15:04:05.000")
}

// cutAtPause ends, at the SIGSTOP, every window on the paused node that
// was open then: its hub reads nothing while stopped, and the node ends
// itself after waking (it lost its lease). What was committed from then on
// lies in the gap. A window that began later is left empty.
func cutAtPause(windows []mcpWindow, node int, at time.Time) []mcpWindow {
	out := slices.Clone(windows)
	for i, w := range out {
		if w.node == node && (w.end.IsZero() || w.end.After(at)) {
			out[i].end, out[i].cause = at, endPaused
		}
	}
	return out
}

// ackTimes maps each acknowledged version (remembers and approvals) to
// when its writer got the answer.
func ackTimes(acks []ack, decs []decisionAck) map[string]time.Time {
	out := make(map[string]time.Time, len(acks))
	for _, a := range acks {
		out[versionKey(a.project, a.slug, a.version)] = a.done
	}
	for _, d := range decs {
		if d.approved {
			out[versionKey(d.proposal.project, d.proposal.slug, d.version)] = d.done
		}
	}
	return out
}
