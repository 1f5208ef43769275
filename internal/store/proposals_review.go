package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"munin/internal/memory"
)

// proposalCols are the columns scanProposal reads, in order, of proposals p
// joined with entries e (the entry's latest version now, 0 for none).
const proposalCols = `p.id, p.slug, p.agent, p.base_version, p.title, p.content, p.tags, p.deleted,
	p.valid_until, p.supersedes, p.similar, p.state, p.created_at, p.decided_by, p.decided_at, p.reason,
	coalesce(p.version, 0), coalesce(e.latest_version, 0)`

const proposalFrom = ` FROM proposals p LEFT JOIN entries e ON e.project = p.project AND e.slug = p.slug`

// scanProposal reads proposalCols; current is the entry's latest version.
func scanProposal(sc interface{ Scan(...any) error }, ref memory.ProjectRef) (memory.Proposal, int, error) {
	var p memory.Proposal
	var tags, supersedes, similar string
	var validUntil, decidedAt sql.NullInt64
	var decidedBy sql.NullString
	var at int64
	var current int
	if err := sc.Scan(&p.ID, &p.Slug, &p.Agent, &p.BaseVersion, &p.Title, &p.Content, &tags, &p.Deleted,
		&validUntil, &supersedes, &similar, &p.State, &at, &decidedBy, &decidedAt, &p.Reason,
		&p.Version, &current); err != nil {
		return p, 0, err
	}
	p.Project, p.CreatedAt = ref, fromNanos(at)
	p.ValidUntil, p.DecidedAt, p.DecidedBy = propTime(validUntil), propTime(decidedAt), decidedBy.String
	var err error
	if p.Tags, err = decodeTags(tags); err != nil {
		return p, 0, err
	}
	if err := json.Unmarshal([]byte(supersedes), &p.Supersedes); err != nil {
		return p, 0, fmt.Errorf("decode supersedes: %w", err)
	}
	if err := json.Unmarshal([]byte(similar), &p.Similar); err != nil {
		return p, 0, fmt.Errorf("decode similar: %w", err)
	}
	if len(p.Supersedes) == 0 {
		p.Supersedes = nil
	}
	if len(p.Similar) == 0 {
		p.Similar = nil
	}
	return p, current, nil
}

// Proposals returns up to limit proposals of a project with ids above
// after, oldest first (the order a queue is worked in): only those in
// state (all when ""), only those of agent (all when ""). current holds,
// for each, the entry's latest version now.
func (s *Store) Proposals(ctx context.Context, ref memory.ProjectRef, state, agent string, after int64, limit int) (props []memory.Proposal, current []int, err error) {
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	limit = clampLimit(limit, memory.DefaultListLimit, memory.MaxPendingProposals)
	// The filters in the order of the indexes (project, agent, state, id)
	// and (project, state, id). +?: see stmtCacheSize.
	where, args := []string{"p.project = +?"}, []any{ref.Project}
	if agent != "" {
		where, args = append(where, "p.agent = +?"), append(args, agent)
	}
	if state != "" {
		where, args = append(where, "p.state = +?"), append(args, state)
	}
	where, args = append(where, "p.id > +?"), append(args, after, limit)
	rows, err := ws.pool.reader.QueryContext(ctx, `SELECT `+proposalCols+proposalFrom+
		` WHERE `+strings.Join(where, " AND ")+` ORDER BY p.id LIMIT +?`, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("proposals of %s: %w", ref, err)
	}
	defer rows.Close()
	props, current = []memory.Proposal{}, []int{}
	for rows.Next() {
		p, cur, err := scanProposal(rows, ref)
		if err != nil {
			return nil, nil, fmt.Errorf("proposals of %s: %w", ref, err)
		}
		props, current = append(props, p), append(current, cur)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("proposals of %s: %w", ref, err)
	}
	return props, current, nil
}

// Proposal returns one proposal of a project and the entry's latest version
// now; an id of another project is not_found, as a missing one.
func (s *Store) Proposal(ctx context.Context, ref memory.ProjectRef, id int64) (memory.Proposal, int, error) {
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return memory.Proposal{}, 0, err
	}
	p, cur, err := scanProposal(ws.pool.reader.QueryRowContext(ctx, `SELECT `+proposalCols+proposalFrom+
		` WHERE p.id = +? AND p.project = +?`, id, ref.Project), ref)
	if errors.Is(err, sql.ErrNoRows) {
		return memory.Proposal{}, 0, errNoProposal(id)
	}
	if err != nil {
		return memory.Proposal{}, 0, fmt.Errorf("proposal %d of %s: %w", id, ref, err)
	}
	return p, cur, nil
}

// errNoProposal is the one answer for a proposal that is missing or of
// another project.
func errNoProposal(id int64) error {
	return memory.Errorf(memory.CodeNotFound, "proposal %d not found", id)
}

// PendingCount counts a project's proposals waiting for review.
func (s *Store) PendingCount(ctx context.Context, ref memory.ProjectRef) (int, error) {
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return 0, err
	}
	var n int
	if err := ws.pool.reader.QueryRowContext(ctx, `SELECT count(*) FROM proposals WHERE project = +? AND state = 'pending'`,
		ref.Project).Scan(&n); err != nil {
		return 0, fmt.Errorf("count pending proposals of %s: %w", ref, err)
	}
	return n, nil
}

// Approve applies a pending proposal as the next version of its entry, in
// one transaction of the workspace's writer: the state check, the version
// and the proposal's new state commit together, so an approval is never
// applied twice. edit carries the reviewer's changes: ExpectedVersion (must
// equal the latest version when the entry moved past the proposal's base),
// and Title, Content, Tags when set (nil Tags: keep the proposal's), and
// Client, the reviewer's OAuth client for the approval's audit row.
func (s *Store) Approve(ctx context.Context, ref memory.ProjectRef, id int64, reviewer string, edit memory.Write) (memory.WriteResult, error) {
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return memory.WriteResult{}, err
	}
	var tags string
	if edit.Tags != nil {
		if tags, err = encodeTags(edit.Tags); err != nil {
			return memory.WriteResult{}, err
		}
	}
	val, err := ws.submit(ctx, func(tx *sql.Tx) (any, error) {
		return applyApproval(tx, ws, ref, id, reviewer, edit, tags)
	})
	if err != nil {
		return memory.WriteResult{}, fmt.Errorf("approve proposal %d: %w", id, err)
	}
	return val.(memory.WriteResult), nil
}

// applyApproval is Approve inside the batch transaction.
func applyApproval(tx *sql.Tx, ws *workspace, ref memory.ProjectRef, id int64, reviewer string, edit memory.Write, editTags string) (memory.WriteResult, error) {
	p, err := pendingIn(tx, ref, id)
	if err != nil {
		return memory.WriteResult{}, err
	}
	var cur int
	if err := tx.QueryRow(`SELECT coalesce((SELECT latest_version FROM entries WHERE project = ? AND slug = ?), 0)`,
		ref.Project, p.Slug).Scan(&cur); err != nil {
		return memory.WriteResult{}, fmt.Errorf("read latest version: %w", err)
	}
	switch {
	case edit.ExpectedVersion != nil && *edit.ExpectedVersion != cur:
		return memory.WriteResult{}, memory.Errorf(memory.CodeConflict,
			"%s is at version %d, expected %d", p.Slug, cur, *edit.ExpectedVersion)
	case edit.ExpectedVersion == nil && cur != p.BaseVersion:
		return memory.WriteResult{}, memory.Errorf(memory.CodeConflict,
			"proposal %d for %s: base %d, now %d: look at both and approve with expected_version %d", id, p.Slug, p.BaseVersion, cur, cur)
	}
	w := memory.Write{
		Slug: p.Slug, Title: p.Title, Content: p.Content, Tags: p.Tags, Agent: p.Agent, Deleted: p.Deleted,
		ExpectedVersion: &cur, ValidUntil: p.ValidUntil, Supersedes: p.Supersedes,
		ApprovedBy: reviewer, Proposal: id, Client: edit.Client,
	}
	tags, err := encodeTags(p.Tags)
	if err != nil {
		return memory.WriteResult{}, err
	}
	if !p.Deleted {
		if edit.Title != "" {
			w.Title = edit.Title
		}
		if edit.Content != "" {
			w.Content = edit.Content
		}
		if edit.Tags != nil {
			w.Tags, tags = edit.Tags, editTags
		}
	}
	res, err := ws.write(tx, ref.Project, w, tags)
	if err != nil {
		return memory.WriteResult{}, err
	}
	if _, err := tx.Exec(`UPDATE proposals SET state = 'approved', decided_by = ?, decided_at = ?, version = ? WHERE id = ?`,
		reviewer, res.CreatedAt.UnixNano(), res.Version, id); err != nil {
		return memory.WriteResult{}, fmt.Errorf("mark proposal approved: %w", err)
	}
	res.Proposal, res.BaseVersion = id, p.BaseVersion
	return res, nil
}

// pendingIn reads proposal id of ref inside the writer's transaction and
// refuses one already decided, naming how.
func pendingIn(tx *sql.Tx, ref memory.ProjectRef, id int64) (memory.Proposal, error) {
	p, _, err := scanProposal(tx.QueryRow(`SELECT `+proposalCols+proposalFrom+` WHERE p.id = +? AND p.project = +?`,
		id, ref.Project), ref)
	if errors.Is(err, sql.ErrNoRows) {
		return p, errNoProposal(id)
	}
	if err != nil {
		return p, fmt.Errorf("read proposal %d: %w", id, err)
	}
	switch p.State {
	case memory.ProposalApproved:
		return p, memory.Errorf(memory.CodeConflict, "proposal %d was already approved by %s as version %d of %s", id, p.DecidedBy, p.Version, p.Slug)
	case memory.ProposalRejected:
		return p, memory.Errorf(memory.CodeConflict, "proposal %d was already rejected by %s", id, p.DecidedBy)
	}
	return p, nil
}

// Reject decides a pending proposal against, with the reviewer's reason;
// the proposal stays readable, with the reason, and an audit row records
// the rejection, with client, the reviewer's OAuth client ("" for none).
func (s *Store) Reject(ctx context.Context, ref memory.ProjectRef, id int64, reviewer, client, reason string) (memory.Proposal, error) {
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return memory.Proposal{}, err
	}
	val, err := ws.submit(ctx, func(tx *sql.Tx) (any, error) {
		p, err := pendingIn(tx, ref, id)
		if err != nil {
			return nil, err
		}
		at := time.Now().UnixNano()
		if _, err := tx.Exec(`UPDATE proposals SET state = 'rejected', decided_by = ?, decided_at = ?, reason = ? WHERE id = ?`,
			reviewer, at, reason, id); err != nil {
			return nil, fmt.Errorf("mark proposal rejected: %w", err)
		}
		if _, err := tx.Exec(`INSERT INTO audit_log (project, agent, action, slug, version, at, proposal, client) VALUES (?, ?, ?, ?, 0, ?, ?, ?)`,
			ref.Project, reviewer, actionReject, p.Slug, at, id, nullString(client)); err != nil {
			return nil, fmt.Errorf("insert audit row: %w", err)
		}
		decided := fromNanos(at)
		p.State, p.DecidedBy, p.DecidedAt, p.Reason = memory.ProposalRejected, reviewer, &decided, reason
		return p, nil
	})
	if err != nil {
		return memory.Proposal{}, fmt.Errorf("reject proposal %d: %w", id, err)
	}
	return val.(memory.Proposal), nil
}

// NoteSimilar records the duplicate hints of a pending proposal, found
// after it was made (the lookup runs once the write is done, so that an
// update pays nothing for it); a decided or missing proposal is left as it is.
func (s *Store) NoteSimilar(ctx context.Context, ref memory.ProjectRef, id int64, similar []memory.Similar) error {
	js, err := propJSON(similar)
	if err != nil {
		return fmt.Errorf("note similar of proposal %d: %w", id, err)
	}
	ws, err := s.requireProject(ctx, ref)
	if err != nil {
		return err
	}
	_, err = ws.submit(ctx, func(tx *sql.Tx) (any, error) {
		_, err := tx.Exec(`UPDATE proposals SET similar = ? WHERE project = ? AND id = ? AND state = 'pending'`, js, ref.Project, id)
		return nil, err
	})
	if err != nil {
		return fmt.Errorf("note similar of proposal %d: %w", id, err)
	}
	return nil
}
