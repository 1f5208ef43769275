package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"munin/internal/memory"
)

// pendingOfQuery reads an agent's pending proposals, newest first, with
// only the columns a recall shows: no join for the entry's latest version
// and no supersedes or similar to decode. The limit is written into the
// statement, so the planner has no bound value to look at (see
// stmtCacheSize); no agent has more pending proposals in a project than the
// project's queue holds.
var pendingOfQuery = `SELECT id, slug, base_version, title, content, tags, deleted, valid_until, created_at
	FROM proposals WHERE project = +? AND agent = +? AND state = 'pending'
	ORDER BY id DESC LIMIT ` + strconv.Itoa(memory.MaxPendingProposals)

// PendingOf returns agent's pending proposals in project ref, newest first:
// what a recall of that agent adds to its hits (read-your-writes for what
// it proposed). Each carries ID, Project, Slug, Agent, State, BaseVersion,
// Title, Content, Tags, Deleted, ValidUntil and CreatedAt; Supersedes and
// Similar are left empty — Proposal and Proposals read them.
//
// Most recalls find none (review is off by default, and a reviewed queue
// is worked off); the index on (project, agent, state, id) answers those
// with one seek, and the latest-version cache answers an agent's repeated
// "none" without SQLite (pending_cache.go). An EXISTS probe before the read saved nothing there (one
// statement costs the same whether it returns a row or none) and cost a
// second statement whenever there were proposals (measured 2026-12-03,
// BenchmarkPendingOf), so there is one statement.
func (s *Store) PendingOf(ctx context.Context, ref memory.ProjectRef, agent string) ([]memory.Proposal, error) {
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return nil, err
	}
	if ws.cachedNoPending(ref.Project, agent) {
		return nil, nil
	}
	seq := ws.latestSeq() // before the read starts (pending_cache.go)
	rows, err := ws.pool.reader.QueryContext(ctx, pendingOfQuery, ref.Project, agent)
	if err != nil {
		return nil, fmt.Errorf("pending proposals of %s in %s: %w", agent, ref, err)
	}
	defer rows.Close()
	var out []memory.Proposal
	for rows.Next() {
		p := memory.Proposal{Project: ref, Agent: agent, State: memory.ProposalPending}
		var tags string
		var validUntil sql.NullInt64
		var at int64
		if err := rows.Scan(&p.ID, &p.Slug, &p.BaseVersion, &p.Title, &p.Content, &tags, &p.Deleted, &validUntil, &at); err != nil {
			return nil, fmt.Errorf("pending proposals of %s in %s: %w", agent, ref, err)
		}
		if p.Tags, err = decodeTags(tags); err != nil {
			return nil, fmt.Errorf("pending proposals of %s in %s: %w", agent, ref, err)
		}
		p.ValidUntil, p.CreatedAt = propTime(validUntil), fromNanos(at)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pending proposals of %s in %s: %w", agent, ref, err)
	}
	if len(out) == 0 {
		ws.fillNoPending(ref.Project, agent, seq)
	}
	return out, nil
}
