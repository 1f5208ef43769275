package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"munin/internal/memory"
	"munin/internal/service"
)

// handlers binds the tools to the service. Arguments and results are the
// service's own request and answer types (the same as REST's); each method
// adds a short text for clients (and models) that read only the text content.
type handlers struct {
	svc *service.Service
}

func (h handlers) remember(ctx context.Context, c memory.Caller, a service.RememberRequest) (service.WriteResult, string, error) {
	res, err := h.svc.Remember(ctx, c, a)
	if err != nil {
		return service.WriteResult{}, "", err
	}
	if res.State == memory.ProposalPending {
		return res, fmt.Sprintf("proposed %s in %s: proposal %s, pending review (based on v%d); until it is approved only you see it%s",
			res.Slug, res.Project, res.Proposal, baseOf(res), similarText(res.Similar)), nil
	}
	return res, fmt.Sprintf("remembered %s v%d in %s%s", res.Slug, res.Version, res.Project, similarText(res.Similar)), nil
}

// baseOf is the version a proposal is based on (0: a new slug).
func baseOf(res service.WriteResult) int {
	if res.BaseVersion == nil {
		return 0
	}
	return *res.BaseVersion
}

// similarText names the existing entries a new slug's text closely
// matches, so that a model reading only the text can still update one of
// them instead of keeping two.
func similarText(sim []memory.Similar) string {
	if len(sim) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nsimilar entries exist — update one of them instead?")
	for _, s := range sim {
		fmt.Fprintf(&b, "\n- %s — %s (%.2f)", s.Slug, oneLine(s.Title, 80), s.Score)
	}
	return b.String()
}

func (h handlers) recall(ctx context.Context, c memory.Caller, a service.RecallRequest) (service.RecallResult, string, error) {
	res, err := h.svc.Recall(ctx, c, a)
	if err != nil {
		return service.RecallResult{}, "", err
	}
	return res, recallText(a.Query, res.Hits), nil
}

// recallText renders recall hits for clients that read only the text. A hit
// found by meaning says so: its snippet may hold none of the query's words;
// so does a hit matched otherwise than by the query's words as written
// (its explanation).
func recallText(query string, hits []service.Hit) string {
	var b strings.Builder
	writeRecallText(&b, query, hits)
	return b.String()
}

// matchNote names how a hit was found, unless by its words alone (the only
// way when meaning search is off).
func matchNote(match string) string {
	switch match {
	case memory.MatchMeaning:
		return " · found by meaning"
	case memory.MatchBoth:
		return " · found by words and meaning"
	}
	return ""
}

// stateNote marks a hit or list entry that is not a live entry: the
// caller's own pending proposal, or (with include_stale) an expired or
// superseded one.
func stateNote(state string) string {
	switch state {
	case "":
		return ""
	case memory.ProposalPending:
		return " · pending review (your proposal)"
	}
	return " · " + state
}

func (h handlers) get(ctx context.Context, c memory.Caller, a service.GetRequest) (service.Entry, string, error) {
	e, err := h.svc.Get(ctx, c, a)
	if err != nil {
		return service.Entry{}, "", err
	}
	// The text carries the whole content: a client without structured
	// content support must still be able to read the entry.
	text := fmt.Sprintf("%s v%d of %d (%s) — %s%s\nby %s at %s%s\n\n%s",
		e.Slug, e.Version, e.LatestVersion, e.Project, oneLine(e.Title, 120), tagList(e.Tags),
		e.Agent, when(e.CreatedAt), validity(e), e.Content)
	return e, text, nil
}

// validity renders what get says about an entry's validity: until when
// it holds, whether it expired, what it replaces and what replaced it.
func validity(e service.Entry) string {
	var b strings.Builder
	if e.ValidUntil != nil {
		fmt.Fprintf(&b, "\nvalid until %s", when(*e.ValidUntil))
	}
	if e.Expired {
		b.WriteString(" (expired)")
	}
	if e.SupersededBy != "" {
		fmt.Fprintf(&b, "\nsuperseded by %s", e.SupersededBy)
	}
	if len(e.Supersedes) > 0 {
		fmt.Fprintf(&b, "\nsupersedes %s", strings.Join(e.Supersedes, ", "))
	}
	return b.String()
}

func (h handlers) list(ctx context.Context, c memory.Caller, a service.ListRequest) (service.ListResult, string, error) {
	res, err := h.svc.List(ctx, c, a)
	if err != nil {
		return service.ListResult{}, "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s", count(len(res.Entries), "entry", "entries"))
	if len(res.Entries) > 0 {
		fmt.Fprintf(&b, " in %s", res.Entries[0].Project)
	}
	for _, e := range res.Entries {
		fmt.Fprintf(&b, "\n- %s v%d — %s%s%s", e.Slug, e.Version, oneLine(e.Title, 80), tagList(e.Tags), stateNote(e.State))
	}
	if res.NextCursor != "" {
		fmt.Fprintf(&b, "\nmore: call list with cursor %q", res.NextCursor)
	}
	return res, b.String(), nil
}

func (h handlers) history(ctx context.Context, c memory.Caller, a service.HistoryRequest) (service.HistoryResult, string, error) {
	res, err := h.svc.History(ctx, c, a)
	if err != nil {
		return service.HistoryResult{}, "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s in %s: %s, newest first", res.Slug, res.Project, count(len(res.Versions), "version", "versions"))
	for _, v := range res.Versions {
		what := oneLine(v.Title, 80)
		if v.Deleted {
			what = "(forgotten)"
		}
		fmt.Fprintf(&b, "\nv%d %s by %s, %d bytes — %s", v.Version, when(v.CreatedAt), v.Agent, v.Size, what)
	}
	return res, b.String(), nil
}

func (h handlers) forget(ctx context.Context, c memory.Caller, a service.ForgetRequest) (service.WriteResult, string, error) {
	res, err := h.svc.Forget(ctx, c, a)
	if err != nil {
		return service.WriteResult{}, "", err
	}
	if res.State == memory.ProposalPending {
		return res, fmt.Sprintf("proposed forgetting %s in %s: proposal %s, pending review (based on v%d)",
			res.Slug, res.Project, res.Proposal, baseOf(res)), nil
	}
	return res, fmt.Sprintf("forgot %s in %s (tombstone v%d; history keeps the older versions)", res.Slug, res.Project, res.Version), nil
}
