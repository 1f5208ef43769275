package service

import (
	"context"
	"time"

	"munin/internal/memory"
	searchtext "munin/internal/search/text"
)

// Recall searches one project of the caller, or every project it holds a key
// for when the request names none, and logs the search in each project searched.
func (s *Service) Recall(ctx context.Context, c memory.Caller, req RecallRequest) (RecallResult, error) {
	keys, err := recallKeys(c, req.Project)
	if err != nil {
		return RecallResult{}, err
	}
	q := memory.SearchQuery{Text: req.Query, Limit: req.Limit, Tags: req.Tags, IncludeStale: req.IncludeStale, At: s.opts.Now().UTC()}
	hits, err := s.recall(ctx, c, keys, &q, true)
	if err != nil {
		return RecallResult{}, err
	}
	out := RecallResult{Hits: make([]Hit, 0, len(hits))}
	for _, h := range hits {
		out.Hits = append(out.Hits, Hit{
			Project: h.Project.String(), Slug: h.Slug, Title: h.Title, Version: h.Version,
			Score: h.Score, Snippet: h.Snippet, Tags: nonNil(h.Tags), UpdatedAt: h.UpdatedAt.UTC(),
			Match: h.Match, Explanation: h.Explanation, State: h.State,
		})
	}
	// The caller's own pending proposals: read-your-writes for what it
	// proposed (review_recall.go), within the limit recall decided.
	if out.Hits, err = s.withPending(ctx, keys, q, out.Hits); err != nil {
		return RecallResult{}, err
	}
	return out, nil
}

// recallKeys are the keys a recall searches with: the one for the project
// named, or every key of the caller.
func recallKeys(c memory.Caller, project string) ([]memory.Key, error) {
	if project != "" || c.ServerAdmin() {
		k, err := target(c, project)
		if err != nil {
			return nil, err
		}
		return []memory.Key{k}, nil
	}
	return c.Keys(), nil
}

// recall searches the projects of keys (of caller c) as one ranked list;
// logged says whether each project's search log gets a row. It leaves in q
// the text and limit it checked and decided, for what Recall adds to the
// hits.
func (s *Service) recall(ctx context.Context, c memory.Caller, keys []memory.Key, q *memory.SearchQuery, logged bool) ([]memory.Hit, error) {
	if len(keys) == 0 {
		return nil, errMissingKey // a caller without keys searches nothing
	}
	for _, k := range keys {
		if err := readsMemory(k); err != nil {
			return nil, err
		}
	}
	// The query's text is checked where every recall's is (search/text), and
	// here, before the rate and the analysis: cheap refusals come first.
	text, err := searchtext.CheckQuery(q.Text)
	if err != nil {
		return nil, err
	}
	q.Text = text
	limit, err := bounded("limit", q.Limit, memory.DefaultRecallLimit, memory.MaxRecallLimit)
	if err != nil {
		return nil, err
	}
	q.Limit = limit
	if err := memory.ValidateTags(q.Tags); err != nil {
		return nil, err
	}
	// The rate of the caller's first key comes before the analysis of the
	// query: a flood of over-long queries must turn into cheap refusals, not
	// analyses. A recall across projects is one recall of that key, and so
	// is a recall in any one project of the caller: naming its projects one
	// by one is no way to a rate per project.
	release, err := s.recallLimit.acquire(ctx, c.First())
	if err != nil {
		return nil, err
	}
	defer release()
	refs := make([]memory.ProjectRef, len(keys))
	for i, k := range keys {
		refs[i] = k.Project
	}
	// The index refuses a query of more than memory.MaxQueryTerms distinct
	// words (searchtext.CheckTerms): only its analysis knows them, and it
	// analyzes the query once.
	start := time.Now()
	hits, err := s.index.SearchProjects(ctx, refs, *q)
	if err != nil {
		return nil, s.internalErr("recall", keys[0], err)
	}
	if logged && !s.opts.SearchLogOff {
		s.logRecall(keys, q.Text, hits, time.Since(start))
	}
	return hits, nil
}

// logRecall writes a search-log row in every project searched, with that
// project's agent and the hits found there.
func (s *Service) logRecall(keys []memory.Key, query string, hits []memory.Hit, took time.Duration) {
	found := make(map[memory.ProjectRef]int, len(keys))
	for _, h := range hits {
		found[h.Project]++
	}
	at := s.opts.Now().UTC()
	for _, k := range keys {
		s.slog.add(memory.SearchLogRow{
			Project:    k.Project,
			Agent:      k.Agent,
			Query:      query,
			Hits:       found[k.Project],
			DurationMS: float64(took.Microseconds()) / 1000,
			At:         at,
		})
	}
}

// Get returns the latest live version of a slug, or the given version.
func (s *Service) Get(ctx context.Context, c memory.Caller, req GetRequest) (Entry, error) {
	key, err := target(c, req.Project)
	if err != nil {
		return Entry{}, err
	}
	at, err := parseAsOf(req.AsOf, s.opts.Now())
	if err != nil {
		return Entry{}, err
	}
	return s.getAsOf(ctx, key, req.Slug, req.Version, at)
}

// get is Get with the key already chosen.
func (s *Service) get(ctx context.Context, key memory.Key, slug string, version int) (Entry, error) {
	return s.getAsOf(ctx, key, slug, version, time.Time{})
}

// getAsOf is get as of at (zero: now): expired and superseded_by are as
// they were then.
func (s *Service) getAsOf(ctx context.Context, key memory.Key, slug string, version int, at time.Time) (Entry, error) {
	if err := readsMemory(key); err != nil {
		return Entry{}, err
	}
	if err := memory.ValidateSlug(slug); err != nil {
		return Entry{}, err
	}
	if version < 0 {
		return Entry{}, memory.Errorf(memory.CodeInvalid, "version must be 1 or more, got %d", version)
	}
	var v memory.Version
	var latest int
	var err error
	now := at
	if at.IsZero() {
		now = s.opts.Now()
		v, latest, err = s.store.Get(ctx, key.Project, slug, version)
	} else {
		v, latest, err = s.store.GetAsOf(ctx, key.Project, slug, version, at)
	}
	if err != nil {
		return Entry{}, s.internalErr("get", key, err)
	}
	if v.Deleted {
		if !at.IsZero() && version == 0 {
			return Entry{}, memory.Errorf(memory.CodeNotFound, "%s was forgotten at %s (version %d); older versions are in its history", slug, at.Format(time.RFC3339), v.Version)
		}
		if version == 0 {
			return Entry{}, memory.Errorf(memory.CodeNotFound, "%s was forgotten at version %d; older versions are in its history", slug, v.Version)
		}
		return Entry{}, memory.Errorf(memory.CodeNotFound, "version %d of %s is the tombstone written by forget", version, slug)
	}
	return Entry{
		Project: key.Project.String(), Slug: v.Slug, Version: v.Version, Title: v.Title, Content: v.Content,
		Tags: nonNil(v.Tags), Agent: v.Agent, CreatedAt: v.CreatedAt.UTC(), LatestVersion: latest,
		ValidUntil: utcOrNil(v.ValidUntil), Supersedes: v.Supersedes,
		Expired: v.Expired(now), SupersededBy: v.SupersededBy,
	}, nil
}

// List pages through the live entries of a project of the caller.
func (s *Service) List(ctx context.Context, c memory.Caller, req ListRequest) (ListResult, error) {
	key, err := target(c, req.Project)
	if err != nil {
		return ListResult{}, err
	}
	limit, err := bounded("limit", req.Limit, memory.DefaultListLimit, memory.MaxListLimit)
	if err != nil {
		return ListResult{}, err
	}
	if err := memory.ValidateText("prefix", req.Prefix, memory.MaxPrefix); err != nil {
		return ListResult{}, err
	}
	if req.Tag != "" {
		if err := memory.ValidateTags([]string{req.Tag}); err != nil {
			return ListResult{}, err
		}
	}
	if err := memory.ValidateText("cursor", req.Cursor, memory.MaxCursor); err != nil {
		return ListResult{}, err
	}
	at, err := parseAsOf(req.AsOf, s.opts.Now())
	if err != nil {
		return ListResult{}, err
	}
	q := memory.ListQuery{Prefix: req.Prefix, Tag: req.Tag, Limit: limit, Cursor: req.Cursor}
	var entries []memory.EntrySummary
	var next string
	now := at
	if at.IsZero() {
		now = s.opts.Now()
		entries, next, err = s.store.List(ctx, key.Project, q)
	} else {
		entries, next, err = s.store.ListAsOf(ctx, key.Project, q, at)
	}
	if err != nil {
		return ListResult{}, s.internalErr("list", key, err)
	}
	out := ListResult{Entries: make([]ListEntry, 0, len(entries)), NextCursor: next}
	for _, e := range entries {
		out.Entries = append(out.Entries, ListEntry{
			Project: key.Project.String(), Slug: e.Slug, Title: e.Title, Version: e.Version,
			Tags: nonNil(e.Tags), UpdatedAt: e.UpdatedAt.UTC(),
			State: memory.Version{ValidUntil: e.ValidUntil, SupersededBy: e.SupersededBy}.StaleState(now),
		})
	}
	return out, nil
}

// History lists a slug's versions, newest first, tombstones included.
func (s *Service) History(ctx context.Context, c memory.Caller, req HistoryRequest) (HistoryResult, error) {
	key, err := target(c, req.Project)
	if err != nil {
		return HistoryResult{}, err
	}
	if err := memory.ValidateSlug(req.Slug); err != nil {
		return HistoryResult{}, err
	}
	limit, err := bounded("limit", req.Limit, memory.DefaultHistoryLimit, memory.MaxHistoryLimit)
	if err != nil {
		return HistoryResult{}, err
	}
	at, err := parseAsOf(req.AsOf, s.opts.Now())
	if err != nil {
		return HistoryResult{}, err
	}
	var versions []memory.VersionInfo
	if at.IsZero() {
		versions, err = s.store.History(ctx, key.Project, req.Slug, limit)
	} else {
		versions, err = s.store.HistoryAsOf(ctx, key.Project, req.Slug, limit, at)
	}
	if err != nil {
		return HistoryResult{}, s.internalErr("history", key, err)
	}
	if len(versions) == 0 {
		return HistoryResult{}, memory.Errorf(memory.CodeNotFound, "no entry %s", req.Slug)
	}
	for i := range versions {
		versions[i].CreatedAt = versions[i].CreatedAt.UTC()
	}
	return HistoryResult{Project: key.Project.String(), Slug: req.Slug, Versions: versions}, nil
}

// bounded applies a default to 0 and rejects values outside 1..max.
func bounded(field string, v, def, max int) (int, error) {
	if v == 0 {
		return def, nil
	}
	if v < 0 || v > max {
		return 0, memory.Errorf(memory.CodeInvalid, "%s must be between 1 and %d, got %d", field, max, v)
	}
	return v, nil
}
