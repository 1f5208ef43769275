//go:build last

// Setup 5's reviewer: one agent with an admin key of the project that, for
// the whole load, lists the pending proposals and decides them — approves
// seven in eight (naming the entry's latest version as expected_version, the
// way a reviewer who compared base and current does) and rejects the rest
// with a reason. It decides up to -last.pruefer proposals at once, each
// slug's in order (with 32 agents a serial reviewer, or one deciding four
// at once, falls behind and the project's pending queue fills up; then the
// agents' remembers are cheap refusals and the setup measures little). It speaks MCP's review tool when the
// server lists one, and REST (/api/v1/proposals) otherwise; the report says
// which.

package lasttest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// The reviewer's rows in the table.
const (
	toolListe      = "prüfen (Liste)"
	toolFreigeben  = "freigeben"
	toolAblehnen   = "ablehnen"
	ablehnGrund    = "Lasttest: abgelehnt, weil jeder achte Vorschlag abgelehnt wird"
	reviewToolName = "review"
)

// reviewerTools are the reviewer's rows, in table order.
var reviewerTools = []string{toolListe, toolFreigeben, toolAblehnen}

// proposalView is what the reviewer reads of a proposal.
type proposalView struct {
	ID             string `json:"id"`
	Project        string `json:"project"`
	Slug           string `json:"slug"`
	Agent          string `json:"agent"`
	BaseVersion    int    `json:"base_version"`
	Content        string `json:"content"`
	State          string `json:"state"`
	Version        int    `json:"version"`
	Reason         string `json:"reason"`
	CurrentVersion int    `json:"current_version"`
}

// pruefer is the reviewer: an MCP session with the admin key (its lat and
// err maps hold the reviewer's rows whichever way it speaks, written under
// mu).
type pruefer struct {
	st    *stand
	mu    sync.Mutex
	ag    *agent
	mcp   bool
	hc    *http.Client
	base  string // the server's root URL, for REST
	token string
}

// newPruefer connects the reviewer and asks the server whether it lists
// the review tool.
func newPruefer(ctx context.Context, hc *http.Client, mcpURL, token string, st *stand) (*pruefer, error) {
	ag, _, err := connect(ctx, hc, mcpURL, token, -50)
	if err != nil {
		return nil, fmt.Errorf("verbinden des Prüfers: %w", err)
	}
	list, err := ag.c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		ag.c.Close()
		return nil, fmt.Errorf("tools/list des Prüfers: %w", err)
	}
	p := &pruefer{st: st, ag: ag, hc: hc, base: strings.TrimSuffix(mcpURL, "/mcp"), token: token}
	p.mcp = slices.ContainsFunc(list.Tools, func(t mcp.Tool) bool { return t.Name == reviewToolName })
	return p, nil
}

// weg names the way the reviewer speaks, for the report.
func (p *pruefer) weg() string {
	if p.mcp {
		return "MCP-Werkzeug review"
	}
	return "REST /api/v1/proposals"
}

// run decides pending proposals until deadline.
func (p *pruefer) run(deadline time.Time) {
	ctx := context.Background()
	for time.Now().Before(deadline) {
		page, _, err := p.list(ctx, "pending", "")
		if err != nil || len(page) == 0 {
			time.Sleep(2 * time.Millisecond) // nothing to do yet
			continue
		}
		// Each slug's proposals in the order listed, by one worker: the
		// entry's latest version as the listing saw it, moved on by each
		// approval (the reviewer is the project's only writer).
		var slugs []string
		bySlug := map[string][]proposalView{}
		for _, v := range page {
			if _, ok := bySlug[v.Slug]; !ok {
				slugs = append(slugs, v.Slug)
			}
			bySlug[v.Slug] = append(bySlug[v.Slug], v)
		}
		work := make(chan []proposalView, len(slugs))
		for _, slug := range slugs {
			work <- bySlug[slug]
		}
		close(work)
		var wg sync.WaitGroup
		for range max(1, *lastPruefer) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for vs := range work {
					p.decide(ctx, vs, deadline)
				}
			}()
		}
		wg.Wait()
	}
}

// decide decides one slug's proposals in order until deadline.
func (p *pruefer) decide(ctx context.Context, vs []proposalView, deadline time.Time) {
	cur := vs[0].CurrentVersion
	for _, v := range vs {
		if !time.Now().Before(deadline) {
			return
		}
		if rand.IntN(8) == 0 {
			if err := p.reject(ctx, v.ID); err == nil {
				p.st.rejected(v.ID)
			}
			continue
		}
		version, err := p.approve(ctx, v.ID, cur)
		if err != nil {
			continue
		}
		cur = version
		p.st.approved(v.ID, wordRE.FindString(v.Content), version, time.Now())
	}
}

// rejected records an acknowledged rejection.
func (st *stand) rejected(id string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.decided[id] = entscheid{state: "rejected", reason: ablehnGrund}
}

// list reads one page of the project's proposals in state.
func (p *pruefer) list(ctx context.Context, state, cursor string) ([]proposalView, string, error) {
	var out struct {
		Proposals  []proposalView `json:"proposals"`
		NextCursor string         `json:"next_cursor"`
	}
	var err error
	if p.mcp {
		args := map[string]any{"action": "list", "project": p.st.project, "state": state}
		if cursor != "" {
			args["cursor"] = cursor
		}
		err = p.tool(ctx, toolListe, args, &out)
	} else {
		q := url.Values{"project": {p.st.project}, "state": {state}, "limit": {"50"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		err = p.rest(ctx, toolListe, http.MethodGet, "/api/v1/proposals?"+q.Encode(), nil, &out)
	}
	return out.Proposals, out.NextCursor, err
}

// approve approves proposal id with expected_version and returns the
// version it wrote.
func (p *pruefer) approve(ctx context.Context, id string, expected int) (int, error) {
	if p.mcp {
		var out struct {
			Proposals []proposalView `json:"proposals"`
		}
		err := p.tool(ctx, toolFreigeben, map[string]any{"action": "approve", "id": id, "expected_version": expected}, &out)
		if err == nil && (len(out.Proposals) != 1 || out.Proposals[0].Version < 1) {
			err = fmt.Errorf("review approve %s: answer without the version written: %+v", id, out.Proposals)
			p.record(toolFreigeben, 0, err)
		}
		if err != nil {
			return 0, err
		}
		return out.Proposals[0].Version, nil
	}
	var out struct {
		Version int `json:"version"`
	}
	err := p.rest(ctx, toolFreigeben, http.MethodPost, "/api/v1/proposals/"+url.PathEscape(id)+"/approve",
		map[string]any{"expected_version": expected}, &out)
	if err == nil && out.Version < 1 {
		err = fmt.Errorf("approve %s: answer without the version written", id)
		p.record(toolFreigeben, 0, err)
	}
	return out.Version, err
}

// reject rejects proposal id with the reviewer's reason.
func (p *pruefer) reject(ctx context.Context, id string) error {
	var out struct{}
	if p.mcp {
		return p.tool(ctx, toolAblehnen, map[string]any{"action": "reject", "id": id, "reason": ablehnGrund}, &out)
	}
	return p.rest(ctx, toolAblehnen, http.MethodPost, "/api/v1/proposals/"+url.PathEscape(id)+"/reject",
		map[string]any{"reason": ablehnGrund}, &out)
}

// tool calls the review tool, records the latency under name and decodes
// the structured content into out.
func (p *pruefer) tool(ctx context.Context, name string, args map[string]any, out any) error {
	start := time.Now()
	sc, err := callRaw(ctx, p.ag.c, reviewToolName, args)
	if err == nil {
		err = decodeInto(sc, out)
	}
	p.record(name, time.Since(start), err)
	return err
}

// record keeps a call's latency (d > 0) and counts its failure.
func (p *pruefer) record(name string, d time.Duration, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d > 0 {
		p.ag.lat[name] = append(p.ag.lat[name], d)
	}
	if err != nil {
		p.ag.fail(name, err)
	}
}

// rest sends one REST request with the admin key, records the latency
// under name and decodes a 2xx answer into out.
func (p *pruefer) rest(ctx context.Context, name, method, path string, body, out any) error {
	start := time.Now()
	err := p.restDo(ctx, method, path, body, out)
	p.record(name, time.Since(start), err)
	return err
}

func (p *pruefer) restDo(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(raw))
	}
	if len(raw) == 0 {
		return nil
	}
	return json.Unmarshal(raw, out)
}

// decodeInto turns a tool's structured content into out.
func decodeInto(v, out any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}
