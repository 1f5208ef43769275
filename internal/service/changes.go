package service

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"munin/internal/feedcursor"
	"munin/internal/memory"
)

// The change feed (docs/changes.md): what changed in the caller's projects
// since a cursor — every version, forget, import, proposal and review
// decision the caller may see, read from the audit log of each workspace
// and never with content. The live stream and the MCP resources are views
// of it.

// ChangesRequest asks for the changes after a cursor. Since "" reads from
// the beginning, "now" answers no changes and the cursor of the present.
type ChangesRequest struct {
	Since string `json:"since,omitempty"`
	Limit int    `json:"limit,omitempty"`
	// PerChange asks for ChangesResult.Cursors. Not a field of the REST or
	// MCP request: the live stream uses it to give every event its cursor
	// from the same read.
	PerChange bool `json:"-"`
}

// Change is one audit row as the feed shows it: who did what to which
// slug, never the text. Kind is the audit action: remember, forget,
// import, propose, approve or reject. Version is 0 for a proposal and its
// rejection; Proposal names the proposal a row concerns.
type Change struct {
	Project  string    `json:"project"`
	Slug     string    `json:"slug"`
	Version  int       `json:"version,omitempty"`
	Agent    string    `json:"agent"`
	Kind     string    `json:"kind"`
	At       time.Time `json:"at"`
	Proposal string    `json:"proposal,omitempty"`
	// Client names the OAuth client (e.g. "Claude") the change was made
	// through, beside Agent; left out for keys and the web UI.
	Client string `json:"client,omitempty"`
}

// ChangesResult is one page of the feed and the cursor after it.
// Unavailable lists the caller's projects whose workspace could not be read
// this time (changes_partial.go): next_cursor keeps their position, so a
// later read from it brings their changes. It is not in the JSON of GET
// /changes and the changes tool yet: declared in the tool's output schema
// it takes tools/list past its budget (TestListTools), which the MCP
// server's lean schemas settle; the live stream sends it as an event.
type ChangesResult struct {
	Changes     []Change      `json:"changes"`
	NextCursor  string        `json:"next_cursor"`
	Unavailable []Unavailable `json:"unavailable,omitempty"`
	// Cursors (with ChangesRequest.PerChange) holds the cursor after each
	// change: Cursors[i] reads on after Changes[i], exactly as NextCursor
	// would if the page had ended there; the last one is NextCursor.
	Cursors []string `json:"-"`
}

// SinceNow is the Since that asks for the cursor of the present.
const SinceNow = "now"

// errBadCursor is the answer to a cursor that is not this server's.
func errBadCursor(err error) error {
	return memory.Errorf(memory.CodeInvalid, "expired or foreign cursor: since is not a cursor of this server (%v); start again with since=now (or an empty since for everything)", err)
}

// feedWorkspace is one workspace of the caller: its projects as the feed
// reads them, and what was read.
type feedWorkspace struct {
	name     string
	projects []memory.FeedProject
	pos      feedcursor.Position // the position the read starts from
	page     memory.FeedPage
	taken    int   // rows of page that made it into the answer
	err      error // the read failed (page is empty): see readFeeds
}

// Changes answers the changes in the caller's projects after req.Since, at
// most req.Limit (default memory.DefaultChangesLimit, at most
// memory.MaxChangesLimit), oldest first across workspaces (by time, then
// workspace) and in commit order within each, and the cursor to read on
// from. A project the caller holds no key for is never read — invariant 7
// (docs/architecture.md#invariant-7-a-caller-reaches-only-its-projects).
func (s *Service) Changes(ctx context.Context, c memory.Caller, req ChangesRequest) (ChangesResult, error) {
	if c.Empty() {
		return ChangesResult{}, errMissingKey
	}
	if c.ServerAdmin() {
		return ChangesResult{}, errMemoryTools
	}
	limit, err := bounded("limit", req.Limit, memory.DefaultChangesLimit, memory.MaxChangesLimit)
	if err != nil {
		return ChangesResult{}, err
	}
	if len(req.Since) > feedcursor.MaxLen {
		return ChangesResult{}, errBadCursor(fmt.Errorf("%d characters", len(req.Since)))
	}
	secret, err := s.store.FeedSecret(ctx)
	if err != nil {
		return ChangesResult{}, s.internalErr("changes", c.First(), err)
	}
	// The audit log's times come from the store's clock, the real one, so
	// the cursor's time (the floor of a workspace new to it) does too. It
	// is taken before reading: a row committed during the read is after it.
	now := time.Now().UnixNano()
	var in feedcursor.Cursor
	switch req.Since {
	case "":
	case SinceNow:
		in.Minted = now
	default:
		if in, err = feedcursor.Decode(secret, req.Since); err != nil {
			return ChangesResult{}, errBadCursor(err)
		}
	}
	wss := feedWorkspaces(c, in)
	if err := s.readFeeds(ctx, c, wss, limit, req.Since == SinceNow); err != nil {
		return ChangesResult{}, err
	}
	changes, from := mergeFeeds(wss, limit)
	res := ChangesResult{Changes: changes, NextCursor: feedcursor.Encode(secret, nextCursor(in, wss, now)),
		Unavailable: unavailable(wss)}
	if req.PerChange {
		res.Cursors = perChangeCursors(secret, in, wss, from, now)
	}
	return res, nil
}

// feedWorkspaces groups the caller's projects by workspace, in key order,
// each with the position the cursor holds for it or, for a workspace new to
// the cursor, the cursor's time as its floor.
func feedWorkspaces(c memory.Caller, in feedcursor.Cursor) []*feedWorkspace {
	var out []*feedWorkspace
	byName := map[string]*feedWorkspace{}
	for _, k := range c.Keys() {
		w := byName[k.Project.Workspace]
		if w == nil {
			w = &feedWorkspace{name: k.Project.Workspace, pos: feedcursor.Position{Workspace: k.Project.Workspace, Floor: in.Minted}}
			for _, p := range in.Positions {
				if p.Workspace == w.name {
					w.pos = p
				}
			}
			byName[w.name] = w
			out = append(out, w)
		}
		w.projects = append(w.projects, memory.FeedProject{Project: k.Project.Project, Viewer: k.Agent, Private: !reviews(c, k)})
	}
	return out
}

// readFeeds reads every workspace at once (in a cluster each read goes to
// its owner). A workspace that fails is left out of the answer
// (settleReads decides when its failure fails the whole call instead).
func (s *Service) readFeeds(ctx context.Context, c memory.Caller, wss []*feedWorkspace, limit int, endOnly bool) error {
	var wg sync.WaitGroup
	for _, w := range wss {
		wg.Go(func() {
			q := memory.FeedQuery{Projects: w.projects, Identity: w.pos.Identity, After: w.pos.After, Stamp: w.pos.Stamp,
				Limit: limit, EndOnly: endOnly}
			if w.pos.After == 0 && w.pos.Floor != 0 {
				q.Floor = time.Unix(0, w.pos.Floor)
			}
			page, err := s.store.FeedRead(ctx, w.name, q)
			if err != nil {
				key, _ := c.KeyFor(memory.ProjectRef{Workspace: w.name, Project: w.projects[0].Project})
				w.err = s.internalErr("changes", key, err)
				return
			}
			w.page = page
		})
	}
	wg.Wait()
	return settleReads(ctx, wss)
}

// mergeFeeds takes up to limit rows from the workspaces' pages: each time
// the oldest head (by time, then workspace name), so each workspace gives
// a prefix of its page in id order, even where an imported row's time is
// older than the row before it. from[i] is the index in wss of the
// workspace changes[i] came from.
func mergeFeeds(wss []*feedWorkspace, limit int) (changes []Change, from []int) {
	out := []Change{}
	for len(out) < limit {
		var next *feedWorkspace
		at := -1
		for i, w := range wss {
			if w.taken == len(w.page.Rows) {
				continue
			}
			if next == nil || cmp.Or(w.page.Rows[w.taken].At.Compare(next.page.Rows[next.taken].At), cmp.Compare(w.name, next.name)) < 0 {
				next, at = w, i
			}
		}
		if next == nil {
			break
		}
		out = append(out, change(next.name, next.page.Rows[next.taken]))
		from = append(from, at)
		next.taken++
	}
	return out, from
}

func change(ws string, r memory.FeedRow) Change {
	ref := memory.ProjectRef{Workspace: ws, Project: r.Project}
	ch := Change{Project: ref.String(), Slug: r.Slug, Version: r.Version, Agent: r.Agent, Kind: r.Action, At: r.At.UTC(), Client: r.Client}
	if r.Proposal != 0 {
		ch.Proposal = ProposalID(ref, r.Proposal)
	}
	return ch
}

// nextCursor is the cursor after the answer: a workspace moves to its
// snapshot's end when the answer took its whole, complete page, else to
// the last row taken (or stays), so a page never skips a row; positions of
// workspaces the caller does not reach now are kept (another set of keys
// may carry the cursor on), up to feedcursor.MaxPositions.
func nextCursor(in feedcursor.Cursor, wss []*feedWorkspace, now int64) feedcursor.Cursor {
	taken := make([]int, len(wss))
	for i, w := range wss {
		taken[i] = w.taken
	}
	return cursorAt(wss, taken, keptPositions(in, wss), now)
}

// cursorAt is the cursor after taken[i] rows of each workspace wss[i]'s
// page (nextCursor's rules), followed by the positions kept of workspaces
// the caller does not reach now; a workspace whose read failed keeps its
// position as it was, so that nothing of it is skipped.
func cursorAt(wss []*feedWorkspace, taken []int, kept []feedcursor.Position, now int64) feedcursor.Cursor {
	out := feedcursor.Cursor{Minted: now, Positions: make([]feedcursor.Position, 0, len(wss)+len(kept))}
	for i, w := range wss {
		out.Positions = append(out.Positions, position(w, taken[i]))
	}
	out.Positions = append(out.Positions, kept...)
	return out
}

// keptPositions are in's positions of workspaces not in wss, as many as fit
// beside them in feedcursor.MaxPositions.
func keptPositions(in feedcursor.Cursor, wss []*feedWorkspace) []feedcursor.Position {
	reached := make(map[string]bool, len(wss))
	for _, w := range wss {
		reached[w.name] = true
	}
	var kept []feedcursor.Position
	for _, p := range in.Positions {
		if !reached[p.Workspace] && len(wss)+len(kept) < feedcursor.MaxPositions {
			kept = append(kept, p)
		}
	}
	return kept
}

// position is workspace w's position after taken rows of its page.
func position(w *feedWorkspace, taken int) feedcursor.Position {
	p := w.pos
	if w.err != nil {
		return p
	}
	p.Identity = w.page.Identity
	switch {
	case w.page.Complete && taken == len(w.page.Rows):
		if w.page.EndID > 0 {
			p.After, p.Stamp, p.Floor = w.page.EndID, w.page.EndStamp, 0
		}
	case taken > 0:
		last := w.page.Rows[taken-1]
		p.After, p.Stamp, p.Floor = last.ID, last.At.UnixNano(), 0
	}
	return p
}

// ChangeSignal returns a channel that receives a value after a write
// batch with audit rows (a change of some project) is acknowledged on this
// node (after COMMIT on a single server, after the replica confirmed it in
// a cluster) in a workspace of the caller's projects (at most one value waits:
// several commits before the receive fold into one),
// and stop, which ends it and releases what it holds. A value means "read
// the feed again", not that the caller may see something new (it may be
// another project's or a proposal it does not see). Writes a cluster's
// other nodes own do not send it: a live reader also reads the feed now
// and then. The channel is never closed; for a caller without project keys
// it never receives.
func (s *Service) ChangeSignal(c memory.Caller) (wake <-chan struct{}, stop func()) {
	ch := make(chan struct{}, 1)
	if c.Empty() || c.ServerAdmin() {
		return ch, func() {}
	}
	var names []string
	for _, ref := range c.Projects() {
		names = append(names, ref.Workspace)
	}
	stop = s.store.OnCommit(names, func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	})
	return ch, stop
}
