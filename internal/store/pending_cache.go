package store

import (
	"strings"

	"munin/internal/memory"
)

// A recall asks for its caller's pending proposals (PendingOf) every time,
// and almost always there are none: review is off by default, and a
// reviewed queue is worked off. The latest-version cache keeps that answer
// too, under a key no slug can have (slugs start with a letter or digit),
// so such a recall reads no SQLite. Only "none" is kept: a non-empty answer
// is read each time. Its fences are the latest cache's: the triggers below
// list the key of every agent whose proposal a batch inserted, updated or
// deleted, and the writer invalidates it after COMMIT and before any caller
// is answered — invariant 3 (docs/architecture.md#invariant-3-read-your-writes)
// holds for a proposal as for a version.
const pendingPrefix = "+pending/"

// pendingSlug is the cache key of agent's pending proposals in a project.
func pendingSlug(agent string) string { return pendingPrefix + agent }

// pendingTriggers list the pending key of each proposal's agent, old and new.
var pendingTriggers = strings.NewReplacer("PREFIX", pendingPrefix).Replace(`
CREATE TEMP TRIGGER IF NOT EXISTS latest_touched_pi AFTER INSERT ON main.proposals BEGIN
	INSERT INTO latest_touched VALUES (new.project, 'PREFIX' || new.agent) ON CONFLICT DO NOTHING; END;
CREATE TEMP TRIGGER IF NOT EXISTS latest_touched_pu AFTER UPDATE ON main.proposals BEGIN
	INSERT INTO latest_touched VALUES (new.project, 'PREFIX' || new.agent) ON CONFLICT DO NOTHING;
	INSERT INTO latest_touched VALUES (old.project, 'PREFIX' || old.agent) ON CONFLICT DO NOTHING; END;
CREATE TEMP TRIGGER IF NOT EXISTS latest_touched_pd AFTER DELETE ON main.proposals BEGIN
	INSERT INTO latest_touched VALUES (old.project, 'PREFIX' || old.agent) ON CONFLICT DO NOTHING; END;`)

// cachedNoPending says whether the cache knows agent has no pending
// proposals in project.
func (ws *workspace) cachedNoPending(project, agent string) bool {
	if ws.cache == nil {
		return false
	}
	return ws.cache.has(latestKey{ws: ws.id, project: project, slug: pendingSlug(agent)})
}

// fillNoPending offers "agent has none", read after seq was taken (the
// cache refuses it if a proposal of agent changed since).
func (ws *workspace) fillNoPending(project, agent string, seq uint64) {
	if ws.cache != nil {
		ws.cache.put(latestKey{ws: ws.id, project: project, slug: pendingSlug(agent)}, memory.Version{}, seq)
	}
}
