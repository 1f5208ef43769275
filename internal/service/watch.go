package service

import (
	"munin/internal/changehub"
	"munin/internal/memory"
)

// WatchEvent is what a watcher of one project hears: the changes to its
// resources — new versions (remember, import, approve) and forgets, never
// a proposal's rows, since a resource is what get returns — in commit
// order; or Resync: changes may have been missed (the workspace's file was
// replaced, or the watcher fell behind), so what the watcher derives from
// them must be read again.
type WatchEvent struct {
	Changes []Change // shared by every watcher of the batch: read only
	Resync  bool
}

// Watch calls fn for every batch of changes committed in project after the
// call, until stop. One feed read per workspace per commit batch serves
// every watcher of that workspace (internal/changehub): a write to a
// workspace with a thousand watchers costs one read, not a thousand. fn
// runs on the hub's goroutine: it must not block and must not call stop;
// after stop returned it is not called again. c must hold a key for
// project, otherwise forbidden in the same words whether the project
// exists or not — invariant 7
// (docs/architecture.md#invariant-7-a-caller-reaches-only-its-projects).
// Keys are checked when Watch is called; a long-lived watcher re-checks
// them itself (KeyByID), as a stream does.
func (s *Service) Watch(c memory.Caller, project memory.ProjectRef, fn func(WatchEvent)) (stop func(), err error) {
	if _, err := target(c, project.String()); err != nil {
		return nil, err
	}
	ref := project.String()
	return s.hub.Watch(project.Workspace, project.Project, func(ev changehub.Event) {
		if ev.Resync {
			fn(WatchEvent{Resync: true})
			return
		}
		// Converted once per batch for every watcher of the project.
		out := ev.Derived(watchChangesKey{}, func() any { return watchChanges(ref, ev.Rows) }).([]Change)
		if len(out) > 0 {
			fn(WatchEvent{Changes: out})
		}
	}), nil
}

// watchChangesKey names watchChanges' result among what watchers derive
// from one hub event.
type watchChangesKey struct{}

// watchChanges are the rows that changed a resource, as Changes.
func watchChanges(ref string, rows []memory.FeedRow) []Change {
	out := []Change{}
	for _, r := range rows {
		if r.Proposal != 0 && r.Action != "approve" {
			continue // a proposal or a decision against it: no resource changed
		}
		out = append(out, Change{Project: ref, Slug: r.Slug, Version: r.Version, Agent: r.Agent, Kind: r.Action, At: r.At.UTC(), Client: r.Client})
	}
	return out
}

// Watchers is the number of watches open.
func (s *Service) Watchers() int { return s.hub.Watchers() }
