//go:build cluster

// The reviewers: one per project with proposals, holding an admin key,
// working the pending queue over REST as a person or a reviewer agent
// would — list (GET /api/v1/proposals), then approve
// (POST /api/v1/proposals/{id}/approve) or reject (…/reject) — always
// through a node that, as etcd says just before, does not own the
// workspace and is not the node the proposer talks to: every decision is
// forwarded to the owner, and every proposal is listed and decided through
// another node than it was made through. The kills go on meanwhile.

package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"
)

// reviewPause is a reviewer's pause when its queue is empty or no node may
// be used; reviewPage is how many pending proposals one listing takes.
const (
	reviewPause = 100 * time.Millisecond
	reviewPage  = 20
)

// outConflict is a decision refused as conflict: the proposal was decided
// already (by a call whose answer was lost) or its entry moved.
const outConflict = "konflikt"

// proposalView is a proposal as REST shows it (service.ProposalView).
type proposalView struct {
	ID             string `json:"id"`
	Slug           string `json:"slug"`
	Agent          string `json:"agent"`
	Content        string `json:"content"`
	BaseVersion    int    `json:"base_version"`
	State          string `json:"state"`
	DecidedBy      string `json:"decided_by"`
	Reason         string `json:"reason"`
	Version        int    `json:"version"`
	CurrentVersion int    `json:"current_version"`
}

// reviewer decides the proposals of one project.
type reviewer struct {
	name     string
	project  string
	token    string
	proposer int // the node the project's proposer talks to
	c        *cluster
	hc       *http.Client

	mu       sync.Mutex
	outcomes map[string]int
	firstBad string
	nBad     int // unexpected errors
	listed   int // listings answered
	already  int // conflicts: decided by an earlier call whose answer was lost
	moved    int // conflicts: the entry moved since the listing
}

// reviewers makes one reviewer (admin key) for each proposer's project.
func (c *cluster) reviewers(t *testing.T, proposers []*agent) []*reviewer {
	if len(proposers) == 0 {
		return nil
	}
	tokens := c.keys(t, len(proposers), "admin", func(i int) (string, string) {
		return proposers[i].project, fmt.Sprintf("gutachter-%02d", i)
	})
	out := make([]*reviewer, len(proposers))
	for i, p := range proposers {
		out[i] = &reviewer{name: fmt.Sprintf("gutachter-%02d", i), project: p.project, token: tokens[i], proposer: p.node, c: c,
			hc:       &http.Client{Timeout: callTimeout(), Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second}},
			outcomes: map[string]int{}}
	}
	return out
}

// ownerNow is the advertise URL of the project's owner in etcd ("" when
// none or unknown).
func (r *reviewer) ownerNow(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	owners, err := readOwners(ctx, r.c.cli)
	if err != nil {
		return ""
	}
	return owners[workspaceOf(r.project)].advertise
}

// pick chooses a node that neither owns the workspace nor is the
// proposer's; ok is false while etcd names no owner.
func (r *reviewer) pick(ctx context.Context) (via int, owner string, ok bool) {
	owner = r.ownerNow(ctx)
	if owner == "" {
		return 0, "", false
	}
	var candidates []int
	for i, n := range r.c.nodes {
		if n.advertise() != owner && i != r.proposer {
			candidates = append(candidates, i)
		}
	}
	if len(candidates) == 0 {
		return 0, "", false
	}
	return candidates[rand.IntN(len(candidates))], owner, true
}

// run works the queue until ctx ends.
func (r *reviewer) run(ctx context.Context, l *ledger) {
	defer r.hc.CloseIdleConnections()
	pause := reconnectMin
	for ctx.Err() == nil {
		via, before, ok := r.pick(ctx)
		if !ok {
			sleep(ctx, reviewPause)
			continue
		}
		var page struct {
			Proposals []proposalView `json:"proposals"`
		}
		q := url.Values{"project": {r.project}, "state": {"pending"}, "limit": {fmt.Sprint(reviewPage)}}
		out := r.call(ctx, http.MethodGet, via, "/api/v1/proposals?"+q.Encode(), nil, &page)
		if out != outOK {
			r.wait(ctx, out, &pause)
			continue
		}
		pause = reconnectMin
		r.mu.Lock()
		r.listed++
		r.mu.Unlock()
		if len(page.Proposals) == 0 {
			sleep(ctx, reviewPause)
			continue
		}
		// The entry's latest version as this reviewer knows it: from the
		// listing, then from its own approvals.
		latest := map[string]int{}
		var batch []decisionAck
		for _, p := range page.Proposals {
			v, known := latest[p.Slug]
			if !known {
				v = p.CurrentVersion
			}
			d, out := r.decideAgain(ctx, via, before, p, v, &pause)
			if out != outOK {
				break // list again
			}
			if d.approved {
				latest[p.Slug] = d.version
			}
			batch = append(batch, d)
		}
		after := r.ownerNow(context.Background())
		for _, d := range batch {
			here := r.c.nodes[d.node].advertise()
			d.forwarded = d.owner != here && after != "" && after != here
			l.addDecision(d)
		}
	}
}

// decideTries bounds the tries of one decision.
const decideTries = 20

// decideAgain decides p through via and, while the answer is unavailable
// or missing, sends the same decision again, as a client does, through a
// node picked anew (the owner may have moved): a decision the owner
// carried out before its answer was lost must then be refused as decided
// already, never applied a second time. owner is etcd's owner when via
// was picked. It returns the last try's decision and outcome.
func (r *reviewer) decideAgain(ctx context.Context, via int, owner string, p proposalView, latest int, pause *time.Duration) (decisionAck, string) {
	var d decisionAck
	var out string
	for try := 1; ; try++ {
		d, out = r.decide(ctx, via, p, latest)
		d.owner = owner
		if out == outOK {
			*pause = reconnectMin
			return d, out
		}
		if (out != outConnection && out != outUnavailable) || try == decideTries || ctx.Err() != nil {
			r.wait(ctx, out, pause)
			return d, out
		}
		r.wait(ctx, out, pause)
		for ctx.Err() == nil {
			var ok bool
			if via, owner, ok = r.pick(ctx); ok {
				break
			}
			sleep(ctx, reviewPause)
		}
	}
}

// wait pauses after an outcome as an agent does.
func (r *reviewer) wait(ctx context.Context, out string, pause *time.Duration) {
	if out == outConnection {
		sleep(ctx, *pause)
		*pause = min(2**pause, reconnectMax)
		return
	}
	sleep(ctx, unavailablePause)
}

// decide approves proposal p, the entry being at version latest, or
// rejects every fourth; a conflict is looked into (decided already, or
// moved).
func (r *reviewer) decide(ctx context.Context, via int, p proposalView, latest int) (decisionAck, string) {
	d := decisionAck{proposal: proposalAck{project: r.project, id: p.ID, slug: p.Slug, content: p.Content, agent: p.Agent,
		base: p.BaseVersion, node: -1}, reviewer: r.name, node: via, sent: time.Now()}
	path := "/api/v1/proposals/" + url.PathEscape(p.ID)
	var out string
	if proposalNumber(p.ID)%4 == 0 {
		d.reason = fmt.Sprintf("%s verwirft %s", r.name, p.ID)
		var res proposalView
		out = r.call(ctx, http.MethodPost, via, path+"/reject", map[string]any{"reason": d.reason}, &res)
	} else {
		var res struct {
			Version  int    `json:"version"`
			Proposal string `json:"proposal"`
		}
		out = r.call(ctx, http.MethodPost, via, path+"/approve", map[string]any{"expected_version": latest}, &res)
		d.approved, d.version = true, res.Version
		if out == outOK && (res.Version != latest+1 || res.Proposal != p.ID) {
			r.bad(fmt.Sprintf("%s: Genehmigung von %s über n%d schrieb v%d (%s), erwartet v%d", r.name, p.ID, via, res.Version, res.Proposal, latest+1))
		}
	}
	d.done = time.Now()
	if out == outConflict {
		var detail struct {
			Proposal proposalView `json:"proposal"`
		}
		if r.call(ctx, http.MethodGet, via, path, nil, &detail) == outOK {
			r.mu.Lock()
			if detail.Proposal.State != "pending" {
				r.already++
			} else {
				r.moved++
			}
			r.mu.Unlock()
		}
	}
	return d, out
}

// call sends one REST request to node via and decodes a 200 into out; it
// counts and returns the outcome. A call cut off by the end of the rounds
// is not counted.
func (r *reviewer) call(ctx context.Context, method string, via int, path string, body, out any) string {
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.c.nodes[via].advertise()+path, rd)
	if err != nil {
		r.bad(err.Error())
		return outOther
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.hc.Do(req)
	if ctx.Err() != nil {
		if err == nil {
			resp.Body.Close()
		}
		return outConnection
	}
	outcome := outConnection
	if err == nil {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		switch resp.StatusCode {
		case http.StatusOK:
			outcome = outOK
			if derr := json.NewDecoder(resp.Body).Decode(out); derr != nil {
				outcome = outOther
				r.bad(fmt.Sprintf("%s %s über n%d: Antwort nicht lesbar: %v", method, path, via, derr))
			}
		case http.StatusServiceUnavailable, http.StatusBadGateway:
			outcome = outUnavailable
		case http.StatusConflict:
			outcome = outConflict
		default:
			outcome = outOther
			json.NewDecoder(resp.Body).Decode(&e)
			r.bad(fmt.Sprintf("%s %s über n%d: %d %s: %s", method, path, via, resp.StatusCode, e.Error.Code, e.Error.Message))
		}
		resp.Body.Close()
	}
	r.mu.Lock()
	r.outcomes[outcome]++
	r.mu.Unlock()
	return outcome
}

// bad counts an unexpected error and keeps the first.
func (r *reviewer) bad(msg string) {
	r.mu.Lock()
	if r.firstBad == "" {
		r.firstBad = msg
	}
	r.nBad++
	r.mu.Unlock()
}
