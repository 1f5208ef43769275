package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"munin/internal/memory"
)

// Facts that expire or are superseded. A version may carry valid_until (when
// it stops holding) and supersedes (slugs of the same project it replaces).
// The writer decides in the write's own transaction whether the named slugs
// exist, are live and form no cycle, and marks them superseded
// (entries.superseded_by) with a supersessions row each, so that a failed
// check writes nothing (invariant 6,
// docs/architecture.md#invariant-6-bad-input-changes-nothing) and an
// approval of a proposal, which runs the same applyWrite, is checked against
// the memory as it is when approved, not when proposed.
//
// supersedes names slugs of the written project only: the store, like the
// service, has no way to name an entry of another project ("other/x" is a
// slug of this project).

// validity is a write's valid_until and supersedes as stored.
type validity struct {
	until      sql.NullInt64 // unix nanoseconds; NULL: no end
	supersedes string        // a JSON array of slugs
}

// checkValidity checks w.Supersedes against the project in tx and returns
// what the version stores. A tombstone (forget) carries neither field.
func checkValidity(tx *sql.Tx, project string, w memory.Write) (validity, error) {
	out := validity{supersedes: "[]"}
	if w.Deleted {
		return out, nil
	}
	if w.ValidUntil != nil {
		out.until = sql.NullInt64{Int64: w.ValidUntil.UnixNano(), Valid: true}
	}
	if len(w.Supersedes) == 0 {
		return out, nil
	}
	// The service checks form, number, duplicates and self (service/validity.go);
	// the store repeats the checks that guard its own consistency.
	if len(w.Supersedes) > memory.MaxSupersedes {
		return out, memory.Errorf(memory.CodeInvalid, "supersedes names %d slugs, at most %d", len(w.Supersedes), memory.MaxSupersedes)
	}
	for _, s := range w.Supersedes {
		if err := memory.ValidateSlug(s); err != nil {
			return out, err
		}
		if s == w.Slug {
			return out, memory.Errorf(memory.CodeInvalid, "supersedes names %s itself", s)
		}
		var deleted bool
		err := tx.QueryRow(`SELECT deleted FROM entries WHERE project = ? AND slug = ?`, project, s).Scan(&deleted)
		if errors.Is(err, sql.ErrNoRows) {
			return out, memory.Errorf(memory.CodeNotFound, "supersedes %s: no such entry in this project", s)
		}
		if err != nil {
			return out, fmt.Errorf("read superseded entry %s: %w", s, err)
		}
		if deleted {
			return out, memory.Errorf(memory.CodeNotFound, "supersedes %s: the entry is forgotten", s)
		}
	}
	if err := checkCycle(tx, project, w.Slug, w.Supersedes); err != nil {
		return out, err
	}
	b, err := json.Marshal(w.Supersedes)
	if err != nil {
		return out, fmt.Errorf("encode supersedes: %w", err)
	}
	out.supersedes = string(b)
	return out, nil
}

// checkCycle refuses supersedes when one of the named slugs' latest
// version supersedes slug, directly or through the supersedes of the
// latest versions of the slugs it names, and so on. The walk visits each
// slug at most once, so it ends after at most as many reads as the project
// has entries that take part in supersessions.
func checkCycle(tx *sql.Tx, project, slug string, supersedes []string) error {
	seen := map[string]bool{slug: true}
	type step struct{ at, via string }
	queue := make([]step, 0, len(supersedes))
	for _, s := range supersedes {
		seen[s] = true
		queue = append(queue, step{s, s})
	}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		var js string
		err := tx.QueryRow(`SELECT v.supersedes FROM entries e CROSS JOIN versions v
			ON v.project = e.project AND v.slug = e.slug AND v.version = e.latest_version
			WHERE e.project = +? AND e.slug = +?`, project, cur.at).Scan(&js)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read supersedes of %s: %w", cur.at, err)
		}
		next, err := decodeSupersedes(js)
		if err != nil {
			return fmt.Errorf("read supersedes of %s: %w", cur.at, err)
		}
		for _, n := range next {
			if n == slug {
				return memory.Errorf(memory.CodeInvalid, "supersedes %s would make a cycle: %s already supersedes %s", cur.via, cur.at, slug)
			}
			if !seen[n] {
				seen[n] = true
				queue = append(queue, step{n, cur.via})
			}
		}
	}
	return nil
}

// supersede marks the slugs version of w.Slug supersedes (checked by
// checkValidity) as superseded by w.Slug, and records when.
func supersede(tx *sql.Tx, project string, w memory.Write, version int, at int64) error {
	if w.Deleted {
		return nil
	}
	for _, s := range w.Supersedes {
		if _, err := tx.Exec(`UPDATE entries SET superseded_by = ? WHERE project = ? AND slug = ?`, w.Slug, project, s); err != nil {
			return fmt.Errorf("mark %s superseded: %w", s, err)
		}
		if _, err := tx.Exec(`INSERT INTO supersessions (project, slug, by_slug, by_version, at) VALUES (?, ?, ?, ?, ?)`,
			project, s, w.Slug, version, at); err != nil {
			return fmt.Errorf("record supersession of %s: %w", s, err)
		}
	}
	return nil
}

// decodeSupersedes reads a versions.supersedes array; nil when empty, so
// that a version without supersedes reads as before they existed.
func decodeSupersedes(s string) ([]string, error) {
	if s == "" || s == "[]" {
		return nil, nil
	}
	out, err := decodeTags(s) // the same JSON array of plain strings
	if err != nil {
		return nil, fmt.Errorf("decode supersedes: %w", err)
	}
	return out, nil
}

// timeOrNil reads a nullable unix-nanosecond column.
func timeOrNil(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromNanos(n.Int64)
	return &t
}
