package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"strings"

	"munin/internal/memory"
)

// List pages through the live entries of a project (latest version not a
// tombstone), ordered by slug. Entries past their valid_until or superseded
// are listed too, with ValidUntil and SupersededBy for the caller to mark.
// The cursor is the base64url of the last slug of the previous page: keyset
// paging stays correct while entries are added.
func (s *Store) List(ctx context.Context, ref memory.ProjectRef, q memory.ListQuery) ([]memory.EntrySummary, string, error) {
	var sb strings.Builder
	sb.WriteString(`SELECT slug, title, latest_version, tags, updated_at, valid_until, superseded_by FROM entries
		WHERE project = +?1 AND deleted = 0 AND slug > +?2`)
	return s.listPage(ctx, ref, q, &sb, nil, "slug", "entries.tags")
}

// listPage completes a list statement that selects listCols' columns of
// project ?1 after slug ?2 (the cursor's) with the query's prefix and tag
// filters on the columns slug and tags, its order and limit, and reads the
// page and the cursor of the next. args are the statement's values after
// ?2. +?: see stmtCacheSize.
func (s *Store) listPage(ctx context.Context, ref memory.ProjectRef, q memory.ListQuery, sb *strings.Builder, args []any, slug, tags string) ([]memory.EntrySummary, string, error) {
	after, err := decodeCursor(q.Cursor)
	if err != nil {
		return nil, "", err
	}
	limit := clampLimit(q.Limit, memory.DefaultListLimit, memory.MaxListLimit)
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return nil, "", err
	}
	args = append([]any{ref.Project, after}, args...)
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("+?%d", len(args))
	}
	if q.Prefix != "" {
		// A range instead of LIKE: it uses the primary key and has no
		// wildcard or case-folding surprises.
		sb.WriteString(` AND ` + slug + ` >= ` + arg(q.Prefix))
		if hi, ok := prefixEnd(q.Prefix); ok {
			sb.WriteString(` AND ` + slug + ` < ` + arg(hi))
		}
	}
	if q.Tag != "" {
		sb.WriteString(` AND EXISTS (SELECT 1 FROM json_each(` + tags + `) WHERE json_each.value = ` + arg(q.Tag) + `)`)
	}
	sb.WriteString(` ORDER BY ` + slug + ` LIMIT ` + arg(limit+1)) // one more tells whether there is a next page

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
		var until sql.NullInt64
		var by sql.NullString
		if err := rows.Scan(&e.Slug, &e.Title, &e.Version, &tags, &at, &until, &by); err != nil {
			return nil, "", fmt.Errorf("list %s: %w", ref, err)
		}
		if e.Tags, err = decodeTags(tags); err != nil {
			return nil, "", fmt.Errorf("list %s: %w", ref, err)
		}
		e.UpdatedAt, e.ValidUntil, e.SupersededBy = fromNanos(at), timeOrNil(until), by.String
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
