package store

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"munin/internal/memory"
)

// List pages through the live entries of a project (latest version not a
// tombstone), ordered by slug. The cursor is the base64url of the last slug
// of the previous page: keyset paging stays correct while entries are added.
func (s *Store) List(ctx context.Context, ref memory.ProjectRef, q memory.ListQuery) ([]memory.EntrySummary, string, error) {
	after, err := decodeCursor(q.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := clampLimit(q.Limit, memory.DefaultListLimit, memory.MaxListLimit)
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return nil, "", err
	}

	// +?: see stmtCacheSize.
	var sb strings.Builder
	sb.WriteString(`SELECT slug, title, latest_version, tags, updated_at FROM entries
		WHERE project = +? AND deleted = 0 AND slug > +?`)
	args := []any{ref.Project, after}
	if q.Prefix != "" {
		// A range instead of LIKE: it uses the primary key and has no
		// wildcard or case-folding surprises.
		sb.WriteString(` AND slug >= +?`)
		args = append(args, q.Prefix)
		if hi, ok := prefixEnd(q.Prefix); ok {
			sb.WriteString(` AND slug < +?`)
			args = append(args, hi)
		}
	}
	if q.Tag != "" {
		sb.WriteString(` AND EXISTS (SELECT 1 FROM json_each(entries.tags) WHERE json_each.value = +?)`)
		args = append(args, q.Tag)
	}
	sb.WriteString(` ORDER BY slug LIMIT +?`)
	args = append(args, limit+1) // one more tells whether there is a next page

	rows, err := ws.pool.reader.QueryContext(ctx, sb.String(), args...)
	if err != nil {
		return nil, "", fmt.Errorf("list %s: %w", ref, err)
	}
	defer rows.Close()
	out := []memory.EntrySummary{}
	for rows.Next() {
		var e memory.EntrySummary
		var tags string
		var at int64
		if err := rows.Scan(&e.Slug, &e.Title, &e.Version, &tags, &at); err != nil {
			return nil, "", fmt.Errorf("list %s: %w", ref, err)
		}
		if e.Tags, err = decodeTags(tags); err != nil {
			return nil, "", fmt.Errorf("list %s: %w", ref, err)
		}
		e.UpdatedAt = fromNanos(at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list %s: %w", ref, err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = base64.RawURLEncoding.EncodeToString([]byte(out[limit-1].Slug))
	}
	return out, next, nil
}

// decodeCursor returns the slug a page starts after ("" for the first page).
func decodeCursor(c string) (string, error) {
	if c == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || memory.ValidateSlug(string(b)) != nil {
		return "", memory.Errorf(memory.CodeInvalid, "cursor %q is not a cursor returned by list", c)
	}
	return string(b), nil
}

// prefixEnd returns the smallest string greater than every string starting
// with prefix (bytewise, like SQLite's BINARY collation); ok is false when
// there is none (prefix is all 0xff bytes).
func prefixEnd(prefix string) (string, bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}
