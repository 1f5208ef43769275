package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"munin/internal/memory"
)

// The embedding worker keeps the vectors table: one vector per slug at most
// (of the version it embedded, for the model in use). The table is the
// worker's queue too: a live latest version without a vector of the model is
// missing, so a restart, a model change or an import needs no bookkeeping.

// missingSQL selects the latest live versions of a workspace (or of one
// project, with onlyProject) without a vector of a model. substr cuts the
// content in SQLite, so a large entry is not read whole just to be cut to
// memory.MaxEmbedText. +?: see stmtCacheSize.
func missingSQL(onlyProject bool) string {
	q := `SELECT e.project, v.slug, v.version, v.title, v.tags, substr(v.content, 1, ?)
	FROM entries e CROSS JOIN versions v ON v.project = e.project AND v.slug = e.slug AND v.version = e.latest_version
	WHERE e.deleted = 0 AND NOT EXISTS (SELECT 1 FROM vectors x
		WHERE x.project = e.project AND x.slug = e.slug AND x.model = +? AND x.version = e.latest_version)`
	if onlyProject {
		q += ` AND e.project = +?`
	}
	return q + ` LIMIT +?`
}

// MissingVectors returns up to limit latest live versions of any project of
// workspace ws that have no vector for model, each with the text to embed.
func (s *Store) MissingVectors(ctx context.Context, ws, model string, limit int) ([]memory.VectorTask, error) {
	w, err := s.workspace(ctx, ws, false)
	if err != nil {
		return nil, err
	}
	return missing(ctx, w, "", model, limit)
}

// MissingProjectVectors is MissingVectors for the project ref alone.
func (s *Store) MissingProjectVectors(ctx context.Context, ref memory.ProjectRef, model string, limit int) ([]memory.VectorTask, error) {
	w, err := s.requireProject(ctx, ref)
	if err != nil {
		return nil, err
	}
	return missing(ctx, w, ref.Project, model, limit)
}

// missing reads missing vectors of w, of one project unless project is "".
func missing(ctx context.Context, w *workspace, project, model string, limit int) ([]memory.VectorTask, error) {
	if model == "" {
		return nil, memory.Errorf(memory.CodeInvalid, "embedding model must not be empty")
	}
	if limit <= 0 {
		limit = memory.MaxEmbedBatch
	}
	args := []any{memory.MaxEmbedText, model}
	if project != "" {
		args = append(args, project)
	}
	return scanTasks(ctx, w, missingSQL(project != ""), append(args, limit))
}

// scanTasks runs a query of missing vectors (project, slug, version, title,
// tags, cut content) and builds the tasks.
func scanTasks(ctx context.Context, w *workspace, q string, args []any) ([]memory.VectorTask, error) {
	rows, err := w.pool.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("missing vectors of %s: %w", w.name, err)
	}
	defer rows.Close()
	var out []memory.VectorTask
	for rows.Next() {
		var t memory.VectorTask
		var title, tags, content string
		if err := rows.Scan(&t.Project.Project, &t.Slug, &t.Version, &title, &tags, &content); err != nil {
			return nil, fmt.Errorf("missing vectors of %s: %w", w.name, err)
		}
		tl, err := decodeTags(tags)
		if err != nil {
			return nil, fmt.Errorf("missing vectors of %s: %w", w.name, err)
		}
		t.Project.Workspace = w.name
		t.Text = memory.EmbedText(title, tl, content)
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("missing vectors of %s: %w", w.name, err)
	}
	return out, nil
}

// CountMissingVectors counts the latest live versions of all projects of
// workspace ws without a vector for model (the backlog metric).
func (s *Store) CountMissingVectors(ctx context.Context, ws, model string) (int, error) {
	w, err := s.workspace(ctx, ws, false)
	if err != nil {
		return 0, err
	}
	return countMissing(ctx, w, "", model)
}

// VectorBacklog counts the latest live versions of ref without a vector for model.
func (s *Store) VectorBacklog(ctx context.Context, ref memory.ProjectRef, model string) (int, error) {
	w, err := s.requireProject(ctx, ref)
	if err != nil {
		return 0, err
	}
	return countMissing(ctx, w, ref.Project, model)
}

// countMissing counts one project's missing vectors, or the workspace's with project "".
func countMissing(ctx context.Context, w *workspace, project, model string) (int, error) {
	// Two statements rather than "? = '' OR project = ?", which would keep
	// SQLite from using the primary key for one project.
	q := `SELECT count(*) FROM entries e WHERE e.deleted = 0 AND NOT EXISTS (SELECT 1 FROM vectors x
		WHERE x.project = e.project AND x.slug = e.slug AND x.model = ? AND x.version = e.latest_version)`
	args := []any{model}
	if project != "" {
		q += ` AND e.project = ?`
		args = append(args, project)
	}
	var n int
	err := w.pool.reader.QueryRowContext(ctx, q, args...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count missing vectors of %s: %w", w.name, err)
	}
	return n, nil
}

// PutVectors stores vectors of workspace ws in one write through its writer.
// Each vector replaces the slug's vector of an older version and those of
// other models, so the file holds at most one vector per slug.
func (s *Store) PutVectors(ctx context.Context, ws string, vs []memory.Vector) error {
	if len(vs) == 0 {
		return nil
	}
	for _, v := range vs {
		if err := checkVector(ws, v); err != nil {
			return err
		}
	}
	w, err := s.workspace(ctx, ws, false)
	if err != nil {
		return err
	}
	_, err = w.submit(ctx, func(tx *sql.Tx) (any, error) {
		for _, v := range vs {
			if _, err := tx.Exec(`DELETE FROM vectors WHERE project = ? AND slug = ? AND model <> ?`,
				v.Project.Project, v.Slug, v.Model); err != nil {
				return nil, fmt.Errorf("drop other models' vectors of %s: %w", v.Slug, err)
			}
			// An older version never replaces a newer one's vector.
			if _, err := tx.Exec(`INSERT INTO vectors (project, slug, model, version, dim, vec) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (project, slug, model) DO UPDATE SET version = excluded.version, dim = excluded.dim, vec = excluded.vec
				WHERE excluded.version >= vectors.version`,
				v.Project.Project, v.Slug, v.Model, v.Version, len(v.Values), encodeVec(v.Values)); err != nil {
				return nil, fmt.Errorf("insert vector of %s: %w", v.Slug, err)
			}
		}
		return nil, nil
	})
	if err != nil {
		return fmt.Errorf("put %d vectors in %s: %w", len(vs), ws, err)
	}
	return nil
}

// checkVector refuses a vector that does not belong to ws or holds no numbers.
func checkVector(ws string, v memory.Vector) error {
	switch {
	case v.Project.Workspace != ws:
		return memory.Errorf(memory.CodeInvalid, "vector of %s/%s stored in workspace %s", v.Project, v.Slug, ws)
	case v.Project.Validate() != nil:
		return v.Project.Validate()
	case memory.ValidateSlug(v.Slug) != nil:
		return memory.ValidateSlug(v.Slug)
	case v.Version < 1:
		return memory.Errorf(memory.CodeInvalid, "vector of %s: version %d must be 1 or more", v.Slug, v.Version)
	case v.Model == "":
		return memory.Errorf(memory.CodeInvalid, "vector of %s: model must not be empty", v.Slug)
	case len(v.Values) == 0:
		return memory.Errorf(memory.CodeInvalid, "vector of %s: no values", v.Slug)
	}
	for _, f := range v.Values {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return memory.Errorf(memory.CodeInvalid, "vector of %s: %v is not a finite number", v.Slug, f)
		}
	}
	return nil
}

// Vectors returns the vectors of model for the latest live versions of ref:
// a forgotten entry's vector and vectors of older versions are left out.
func (s *Store) Vectors(ctx context.Context, ref memory.ProjectRef, model string) ([]memory.Vector, error) {
	w, err := s.requireProject(ctx, ref)
	if err != nil {
		return nil, err
	}
	// +?: see stmtCacheSize.
	rows, err := w.pool.reader.QueryContext(ctx, `SELECT x.slug, x.version, x.vec
		FROM entries e CROSS JOIN vectors x ON x.project = e.project AND x.slug = e.slug AND x.model = +? AND x.version = e.latest_version
		WHERE e.project = +? AND e.deleted = 0`, model, ref.Project)
	if err != nil {
		return nil, fmt.Errorf("vectors of %s: %w", ref, err)
	}
	defer rows.Close()
	out := []memory.Vector{}
	for rows.Next() {
		v := memory.Vector{Project: ref, Model: model}
		var blob []byte
		if err := rows.Scan(&v.Slug, &v.Version, &blob); err != nil {
			return nil, fmt.Errorf("vectors of %s: %w", ref, err)
		}
		if v.Values, err = decodeVec(blob); err != nil {
			return nil, fmt.Errorf("vectors of %s, %s: %w", ref, v.Slug, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("vectors of %s: %w", ref, err)
	}
	return out, nil
}

// encodeVec stores float32s little-endian, 4 bytes each.
func encodeVec(vals []float32) []byte {
	b := make([]byte, 4*len(vals))
	for i, f := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// decodeVec is the inverse of encodeVec.
func decodeVec(b []byte) ([]float32, error) {
	if len(b) == 0 || len(b)%4 != 0 {
		return nil, fmt.Errorf("vector blob of %d bytes is not a list of float32", len(b))
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

// pendingChunk bounds the slugs of one PendingVectors statement.
const pendingChunk = 500

// PendingVectors returns, of the given slugs of ref, the latest live
// versions without a vector for model: the worker asks it for the slugs it
// was told were written, so that keeping up costs one key lookup per write
// rather than a scan of the workspace.
func (s *Store) PendingVectors(ctx context.Context, ref memory.ProjectRef, model string, slugs []string) ([]memory.VectorTask, error) {
	w, err := s.requireProject(ctx, ref)
	if err != nil {
		return nil, err
	}
	var out []memory.VectorTask
	for len(slugs) > 0 {
		chunk := slugs[:min(len(slugs), pendingChunk)]
		slugs = slugs[len(chunk):]
		args := []any{memory.MaxEmbedText, model, ref.Project}
		for _, slug := range chunk {
			args = append(args, slug)
		}
		// +?: see stmtCacheSize.
		q := `SELECT e.project, v.slug, v.version, v.title, v.tags, substr(v.content, 1, ?)
			FROM entries e CROSS JOIN versions v ON v.project = e.project AND v.slug = e.slug AND v.version = e.latest_version
			WHERE e.deleted = 0 AND NOT EXISTS (SELECT 1 FROM vectors x
				WHERE x.project = e.project AND x.slug = e.slug AND x.model = +? AND x.version = e.latest_version)
			AND e.project = +? AND e.slug IN (+?` + strings.Repeat(", +?", len(chunk)-1) + `)`
		ts, err := scanTasks(ctx, w, q, args)
		if err != nil {
			return nil, err
		}
		out = append(out, ts...)
	}
	return out, nil
}
