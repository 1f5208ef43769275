package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"munin/internal/memory"
	"munin/internal/service"
)

// handlers binds the tools to the service. Each method maps arguments to a
// service call and the answer to the tool's result type and a short text for
// clients (and models) that read only the text content.
type handlers struct {
	svc *service.Service
}

func (h handlers) remember(ctx context.Context, key memory.Key, a rememberArgs) (rememberResult, string, error) {
	res, err := h.svc.Remember(ctx, key, service.RememberInput{
		Slug:            a.Slug,
		Title:           a.Title,
		Content:         a.Content,
		Tags:            a.Tags,
		ExpectedVersion: a.ExpectedVersion,
		IdempotencyKey:  a.IdempotencyKey,
	})
	if err != nil {
		return rememberResult{}, "", err
	}
	out := rememberResult{Slug: res.Slug, Version: res.Version, CreatedAt: stamp(res.CreatedAt)}
	return out, fmt.Sprintf("remembered %s v%d", res.Slug, res.Version), nil
}

func (h handlers) recall(ctx context.Context, key memory.Key, a recallArgs) (recallResult, string, error) {
	hits, err := h.svc.Recall(ctx, key, memory.SearchQuery{Text: a.Query, Limit: a.Limit, Tags: a.Tags})
	if err != nil {
		return recallResult{}, "", err
	}
	out := recallResult{Hits: make([]recallHit, 0, len(hits))}
	var b strings.Builder
	if len(hits) == 0 {
		fmt.Fprintf(&b, "no entries match %q", strings.TrimSpace(a.Query))
	} else {
		fmt.Fprintf(&b, "%s for %q:", count(len(hits), "hit", "hits"), strings.TrimSpace(a.Query))
	}
	for i, hit := range hits {
		out.Hits = append(out.Hits, recallHit{
			Slug:      hit.Slug,
			Title:     hit.Title,
			Version:   hit.Version,
			Score:     hit.Score,
			Snippet:   hit.Snippet,
			Tags:      nonNil(hit.Tags),
			UpdatedAt: stamp(hit.UpdatedAt),
		})
		fmt.Fprintf(&b, "\n%d. %s v%d — %s%s\n   %s", i+1, hit.Slug, hit.Version,
			oneLine(hit.Title, 80), tagList(hit.Tags), oneLine(hit.Snippet, 240))
	}
	return out, b.String(), nil
}

func (h handlers) get(ctx context.Context, key memory.Key, a getArgs) (getResult, string, error) {
	res, err := h.svc.Get(ctx, key, a.Slug, a.Version)
	if err != nil {
		return getResult{}, "", err
	}
	v := res.Version
	out := getResult{
		Slug:          v.Slug,
		Version:       v.Version,
		Title:         v.Title,
		Content:       v.Content,
		Tags:          nonNil(v.Tags),
		Agent:         v.Agent,
		CreatedAt:     stamp(v.CreatedAt),
		LatestVersion: res.LatestVersion,
	}
	// The text carries the whole content: a client without structured
	// content support must still be able to read the entry.
	text := fmt.Sprintf("%s v%d of %d — %s%s\nby %s at %s\n\n%s",
		v.Slug, v.Version, res.LatestVersion, oneLine(v.Title, 120), tagList(v.Tags),
		v.Agent, when(v.CreatedAt), v.Content)
	return out, text, nil
}

func (h handlers) list(ctx context.Context, key memory.Key, a listArgs) (listResult, string, error) {
	entries, next, err := h.svc.List(ctx, key, memory.ListQuery{Prefix: a.Prefix, Tag: a.Tag, Limit: a.Limit, Cursor: a.Cursor})
	if err != nil {
		return listResult{}, "", err
	}
	out := listResult{Entries: make([]listEntry, 0, len(entries)), NextCursor: next}
	var b strings.Builder
	fmt.Fprintf(&b, "%s", count(len(entries), "entry", "entries"))
	for _, e := range entries {
		out.Entries = append(out.Entries, listEntry{
			Slug:      e.Slug,
			Title:     e.Title,
			Version:   e.Version,
			Tags:      nonNil(e.Tags),
			UpdatedAt: stamp(e.UpdatedAt),
		})
		fmt.Fprintf(&b, "\n- %s v%d — %s%s", e.Slug, e.Version, oneLine(e.Title, 80), tagList(e.Tags))
	}
	if next != "" {
		fmt.Fprintf(&b, "\nmore: call list with cursor %q", next)
	}
	return out, b.String(), nil
}

func (h handlers) history(ctx context.Context, key memory.Key, a historyArgs) (historyResult, string, error) {
	versions, err := h.svc.History(ctx, key, a.Slug, a.Limit)
	if err != nil {
		return historyResult{}, "", err
	}
	out := historyResult{Versions: make([]historyVersion, 0, len(versions))}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s, newest first", a.Slug, count(len(versions), "version", "versions"))
	for _, v := range versions {
		out.Versions = append(out.Versions, historyVersion{
			Version:   v.Version,
			Title:     v.Title,
			Agent:     v.Agent,
			CreatedAt: stamp(v.CreatedAt),
			Deleted:   v.Deleted,
			Size:      v.Size,
		})
		what := oneLine(v.Title, 80)
		if v.Deleted {
			what = "(forgotten)"
		}
		fmt.Fprintf(&b, "\nv%d %s by %s, %d bytes — %s", v.Version, when(v.CreatedAt), v.Agent, v.Size, what)
	}
	return out, b.String(), nil
}

func (h handlers) forget(ctx context.Context, key memory.Key, a forgetArgs) (forgetResult, string, error) {
	res, err := h.svc.Forget(ctx, key, a.Slug, a.ExpectedVersion)
	if err != nil {
		return forgetResult{}, "", err
	}
	out := forgetResult{Slug: res.Slug, Version: res.Version}
	return out, fmt.Sprintf("forgot %s (tombstone v%d; history keeps the older versions)", res.Slug, res.Version), nil
}
