package store

import (
	"database/sql"
	"fmt"
	"strings"

	"munin/internal/memory"
)

// The writer learns which slugs a batch changed from SQLite itself: temporary
// triggers on its own connection record every entry that any write inserts,
// updates or deletes, and every version row it updates or deletes (remember,
// forget, approvals,
// imports, supersessions — whatever statement a future write adds), so no
// write path can bypass the invalidation of the latest-version cache
// (latestcache.go). They live in the connection's temp schema: readers and
// the file never see them. If the connection was ever replaced, the table is
// gone, reading it fails, and the batch purges the workspace's cache and
// installs them again. Each slug is listed once per batch: the table's key
// with an upsert's DO NOTHING (a trigger's OR IGNORE would give way to its
// outer statement's conflict clause); an update lists the old key only if
// the key itself changed (no statement does that today).
//
// A new version row alone changes no cached value: the cache holds the
// version an entry's latest_version points to, and a new version becomes
// it only by an update of the entry. So versions have no insert trigger,
// one trigger less for every write; an update or delete of a version row
// (none today) is listed.
//
// Proposals list their agent's pending key (pendingSlug) on any insert,
// update or delete, for the cache's "no pending proposals" answers
// (pending_cache.go).
var latestTouchedSQL = "CREATE TEMP TABLE IF NOT EXISTS latest_touched (project TEXT NOT NULL, slug TEXT NOT NULL, PRIMARY KEY (project, slug)) WITHOUT ROWID;" +
	`CREATE TEMP TRIGGER IF NOT EXISTS latest_touched_ei AFTER INSERT ON main.entries BEGIN
	INSERT INTO latest_touched VALUES (new.project, new.slug) ON CONFLICT DO NOTHING; END;` +
	touchedTriggers("entries", "e") + touchedTriggers("versions", "v") + pendingTriggers

// touchedTriggers are the triggers that list the slugs of table's updated
// and deleted rows (name: a short prefix for their names).
func touchedTriggers(table, name string) string {
	return strings.NewReplacer("TABLE", table, "NAME", name).Replace(`
CREATE TEMP TRIGGER IF NOT EXISTS latest_touched_NAMEu AFTER UPDATE ON main.TABLE BEGIN
	INSERT INTO latest_touched VALUES (new.project, new.slug) ON CONFLICT DO NOTHING; END;
CREATE TEMP TRIGGER IF NOT EXISTS latest_touched_NAMEk AFTER UPDATE OF project, slug ON main.TABLE
	WHEN old.project IS NOT new.project OR old.slug IS NOT new.slug BEGIN
	INSERT INTO latest_touched VALUES (old.project, old.slug) ON CONFLICT DO NOTHING; END;
CREATE TEMP TRIGGER IF NOT EXISTS latest_touched_NAMEd AFTER DELETE ON main.TABLE BEGIN
	INSERT INTO latest_touched VALUES (old.project, old.slug) ON CONFLICT DO NOTHING; END;`)
}

// startLatestCache installs the triggers on a new workspace's writer
// connection; without them the workspace reads without the cache.
func (ws *workspace) startLatestCache() {
	if ws.s.latest == nil {
		return
	}
	// In memory: a temp table on disk costs every batch file system calls
	// (about as much CPU again as the writes' own, measured). Set before
	// the temp schema exists; a reinstall in a batch (batchTouched) cannot
	// change it inside the transaction and keeps SQLite's default.
	if _, err := ws.pool.writer.Exec("PRAGMA temp_store = MEMORY;" + latestTouchedSQL); err != nil {
		ws.s.log.Warn("latest-version cache off for workspace", "workspace", ws.name, "err", err)
		return
	}
	ws.cache = ws.s.latest
}

// batchTouched reads and clears what the batch in tx changed. all means it
// could not be told: the caller purges the workspace's cache.
func (ws *workspace) batchTouched(tx *sql.Tx) (keys []projectSlug, all bool) {
	if ws.cache == nil {
		return nil, false
	}
	keys, err := readTouched(tx)
	if err != nil {
		ws.s.log.Warn("latest-version cache: changed slugs unknown, purging", "workspace", ws.name, "err", err)
		if _, err := tx.Exec(latestTouchedSQL); err != nil {
			ws.s.log.Warn("latest-version cache: reinstall triggers", "workspace", ws.name, "err", err)
		}
		return nil, true
	}
	return keys, false
}

func readTouched(tx *sql.Tx) ([]projectSlug, error) {
	rows, err := tx.Query(`DELETE FROM temp.latest_touched RETURNING project, slug`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []projectSlug
	for rows.Next() {
		var k projectSlug
		if err := rows.Scan(&k.project, &k.slug); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read changed slugs: %w", err)
	}
	return keys, nil
}

// invalidateLatest runs in the writer goroutine after COMMIT (or a failed
// one) and before any caller of the batch is answered: from then on no
// read on this node returns what the batch replaced — invariant 3
// (docs/architecture.md#invariant-3-read-your-writes).
func (ws *workspace) invalidateLatest(keys []projectSlug, all bool) {
	switch {
	case ws.cache == nil:
	case all:
		ws.cache.purge(ws.id)
	default:
		ws.cache.invalidate(ws.id, keys)
	}
}

// closeLatest forgets the workspace's cached versions once its writer has
// stopped: a reopened workspace (a new owner, a restored file) starts empty.
func (ws *workspace) closeLatest() {
	if ws.cache != nil {
		ws.cache.purge(ws.id)
	}
}

// cachedLatest returns a copy of the cached latest version of slug.
func (ws *workspace) cachedLatest(project, slug string) (memory.Version, bool) {
	if ws.cache == nil {
		return memory.Version{}, false
	}
	return ws.cache.get(latestKey{ws: ws.id, project: project, slug: slug})
}

// latestSeq is what a reader takes before its read statement starts, for
// fillLatest after it.
func (ws *workspace) latestSeq() uint64 {
	if ws.cache == nil {
		return 0
	}
	return ws.cache.begin()
}

// fillLatest offers v, the latest version of its slug read after seq was
// taken, to the cache (which refuses it if the slug changed since).
func (ws *workspace) fillLatest(project string, v memory.Version, seq uint64) {
	if ws.cache != nil {
		ws.cache.put(latestKey{ws: ws.id, project: project, slug: v.Slug}, v, seq)
	}
}

// cachedLatestMany puts the cached latest versions of slugs into out and
// returns the slugs still to read (slugs itself when the cache is off).
func (ws *workspace) cachedLatestMany(project string, slugs []string, out map[string]memory.Version) []string {
	if ws.cache == nil {
		return slugs
	}
	var missing []string
	for i, slug := range slugs {
		if v, ok := ws.cachedLatest(project, slug); ok {
			if missing == nil {
				missing = append(make([]string, 0, len(slugs)), slugs[:i]...)
			}
			out[slug] = v
		} else if missing != nil {
			missing = append(missing, slug)
		}
	}
	if missing == nil {
		return slugs // nothing was cached
	}
	return missing
}
