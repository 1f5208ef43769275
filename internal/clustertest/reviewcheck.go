//go:build cluster

// The verdict on proposals and decisions after the rounds: every
// acknowledged proposal is listed by its project's owner now (it followed
// the workspace through the kills) as it was acknowledged; every
// acknowledged decision holds; each approved proposal is exactly one
// version of its entry, with its content and its proposer as agent, and
// no pending or rejected proposal is any version. The same from each
// workspace's replica, whose proposals table must hold what was
// acknowledged.

package clustertest

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// entryVersion is one version's content and agent.
type entryVersion struct{ content, agent string }

// reviewReader reads what the check compares: a project's proposals in
// every state, and every version of an entry.
type reviewReader interface {
	proposals(ctx context.Context, project string) ([]proposalView, error)
	versions(ctx context.Context, project, slug string) (map[int]entryVersion, error)
}

// reviewVerdict is what the proposal check found.
type reviewVerdict struct {
	verdict
	listed    int // proposals listed at the end
	proposals int // acknowledged proposals compared
	decisions int // acknowledged decisions compared
	twice     int // approved proposals that are more than one version
	missing   int // approved proposals that are no version (or another one)
	leaked    int // pending or rejected proposals that are a version
}

// verifyReview compares the acks with what rr reads now.
func verifyReview(ctx context.Context, rr reviewReader, projects []string, props []proposalAck, decs []decisionAck) *reviewVerdict {
	v := &reviewVerdict{}
	listed := map[string]proposalView{}
	var order []proposalView
	for _, project := range projects {
		ps, err := rr.proposals(ctx, project)
		if err != nil {
			v.problem(false, false, "%s: Vorschläge nicht lesbar: %v", project, err)
		}
		for _, p := range ps {
			listed[p.ID] = p
			order = append(order, p)
		}
	}
	v.listed = len(order)
	for _, a := range props {
		p, ok := listed[a.id]
		switch {
		case !ok:
			v.problem(true, false, "Vorschlag %s (%s %s über n%d) fehlt", a.id, a.agent, a.slug, a.node)
		case p.Slug != a.slug || p.Content != a.content || p.Agent != a.agent || p.BaseVersion != a.base:
			v.problem(true, false, "Vorschlag %s: gelesen %s %q von %s auf v%d, bestätigt war %s %q von %s auf v%d",
				a.id, p.Slug, p.Content, p.Agent, p.BaseVersion, a.slug, a.content, a.agent, a.base)
		}
	}
	v.proposals = len(props)
	for _, d := range decs {
		p, ok := listed[d.proposal.id]
		switch {
		case !ok:
			v.problem(true, false, "entschiedener Vorschlag %s fehlt", d.proposal.id)
		case d.approved && (p.State != "approved" || p.Version != d.version || p.DecidedBy != d.reviewer):
			v.problem(true, false, "Vorschlag %s: %s, v%d, von %q; bestätigt war genehmigt als v%d von %s",
				d.proposal.id, p.State, p.Version, p.DecidedBy, d.version, d.reviewer)
		case !d.approved && (p.State != "rejected" || p.Reason != d.reason):
			v.problem(true, false, "Vorschlag %s: %s (%q); bestätigt war verworfen (%q)", d.proposal.id, p.State, p.Reason, d.reason)
		}
	}
	v.decisions = len(decs)

	// Every entry a proposal was made for, read version by version.
	bySlug := map[slugRef][]proposalView{}
	for _, p := range order {
		r := slugRef{projectOfID(p.ID), p.Slug}
		bySlug[r] = append(bySlug[r], p)
	}
	for r, ps := range bySlug {
		vs, err := rr.versions(ctx, r.project, r.slug)
		if err != nil {
			v.problem(false, true, "%s %s: Fassungen nicht lesbar: %v", r.project, r.slug, err)
			continue
		}
		for n := 1; n <= len(vs); n++ {
			if _, ok := vs[n]; !ok {
				v.problem(false, true, "%s %s: %d Fassungen, v%d fehlt: Lücke", r.project, r.slug, len(vs), n)
			}
		}
		v.counted(1, len(vs), 0)
		count := map[string]int{}
		for _, ev := range vs {
			count[ev.content]++
		}
		for _, p := range ps {
			n := count[p.Content]
			switch {
			case p.State == "approved" && n > 1:
				v.twice++
				v.problem(false, false, "Vorschlag %s ist %d Fassungen von %s", p.ID, n, p.Slug)
			case p.State == "approved" && (vs[p.Version].content != p.Content || !sameAgent(vs[p.Version].agent, p.Agent)):
				v.missing++
				v.problem(false, false, "Vorschlag %s genehmigt als v%d von %s, dort steht %q von %s", p.ID, p.Version, p.Slug,
					vs[p.Version].content, vs[p.Version].agent)
			case p.State != "approved" && n > 0:
				v.leaked++
				v.problem(false, false, "Vorschlag %s (%s) ist eine Fassung von %s", p.ID, p.State, p.Slug)
			}
		}
	}
	return v
}

// sameAgent compares a version's agent with the proposer's; "" is a
// version below the history page (historyPage), whose agent was not read.
func sameAgent(read, proposer string) bool { return read == "" || read == proposer }

// projectOfID is the "workspace/project" of a proposal id workspace.project.n.
func projectOfID(id string) string {
	parts := strings.Split(id, ".")
	if len(parts) != 3 {
		return ""
	}
	return parts[0] + "/" + parts[1]
}

// restReview reads proposals and versions over REST with an admin key per
// project (a proposal list in every state needs one).
type restReview struct{ r *restReader }

// maxProposalPages bounds the pages of one project's listing.
const maxProposalPages = 1000

func (rr restReview) proposals(ctx context.Context, project string) ([]proposalView, error) {
	var out []proposalView
	cursor := ""
	for range maxProposalPages {
		q := url.Values{"project": {project}, "state": {"all"}, "limit": {strconv.Itoa(historyPage)}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page struct {
			Proposals  []proposalView `json:"proposals"`
			NextCursor string         `json:"next_cursor"`
		}
		if err := rr.r.do(ctx, project+cursor, "/api/v1/proposals", q, &page); err != nil {
			return out, err
		}
		out = append(out, page.Proposals...)
		if cursor = page.NextCursor; cursor == "" {
			return out, nil
		}
	}
	return out, errors.New("more pages than the check reads")
}

func (rr restReview) versions(ctx context.Context, project, slug string) (map[int]entryVersion, error) {
	out := map[int]entryVersion{}
	_, _, latest, found, err := rr.r.get(ctx, project, slug, 0)
	if err != nil || !found {
		return out, err
	}
	q := url.Values{"project": {project}, "limit": {strconv.Itoa(historyPage)}}
	var h struct {
		Versions []struct {
			Version int    `json:"version"`
			Agent   string `json:"agent"`
		} `json:"versions"`
	}
	if err := rr.r.do(ctx, project+slug, "/api/v1/history/"+escapeSlug(slug), q, &h); err != nil {
		return out, err
	}
	// The newest historyPage versions' agents; older ones stay "".
	agents := map[int]string{}
	for _, x := range h.Versions {
		agents[x.Version] = x.Agent
	}
	for n := 1; n <= latest; n++ {
		content, got, _, found, err := rr.r.get(ctx, project, slug, n)
		if err != nil {
			return out, err
		}
		if found && got == n {
			out[n] = entryVersion{content, agents[n]}
		}
	}
	return out, nil
}

// storedProposal is a proposal row of a workspace file.
type storedProposal struct {
	slug, agent, content, state, reason string
	decidedBy                           string
	base, version                       int
}

// readStoredProposals reads the proposals of a workspace file by number.
func readStoredProposals(path string) (map[int64]storedProposal, error) {
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.Query(`SELECT id, slug, agent, content, base_version, state, coalesce(decided_by, ''), reason, coalesce(version, 0) FROM proposals`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]storedProposal{}
	for rows.Next() {
		var id int64
		var p storedProposal
		if err := rows.Scan(&id, &p.slug, &p.agent, &p.content, &p.base, &p.state, &p.decidedBy, &p.reason, &p.version); err != nil {
			return nil, err
		}
		out[id] = p
	}
	return out, rows.Err()
}

// compareStoredProposals checks a workspace file's proposals against the
// acknowledged proposals and decisions of that workspace.
func compareStoredProposals(s map[int64]storedProposal, props []proposalAck, decs []decisionAck, v *verdict) {
	for _, a := range props {
		p, ok := s[proposalNumber(a.id)]
		switch {
		case !ok:
			v.problem(true, false, "Vorschlag %s (%s über n%d) fehlt in der Datei", a.id, a.agent, a.node)
		case p.slug != a.slug || p.content != a.content || p.agent != a.agent || p.base != a.base:
			v.problem(true, false, "Vorschlag %s: in der Datei %s %q, bestätigt war %s %q", a.id, p.slug, p.content, a.slug, a.content)
		}
	}
	for _, d := range decs {
		p, ok := s[proposalNumber(d.proposal.id)]
		switch {
		case !ok:
			v.problem(true, false, "entschiedener Vorschlag %s fehlt in der Datei", d.proposal.id)
		case d.approved && (p.state != "approved" || p.version != d.version || p.decidedBy != d.reviewer):
			v.problem(true, false, "Vorschlag %s in der Datei: %s als v%d; bestätigt war genehmigt als v%d", d.proposal.id, p.state, p.version, d.version)
		case !d.approved && (p.state != "rejected" || p.reason != d.reason):
			v.problem(true, false, "Vorschlag %s in der Datei: %s; bestätigt war verworfen", d.proposal.id, p.state)
		}
	}
	v.counted(0, 0, len(props)+len(decs))
}
