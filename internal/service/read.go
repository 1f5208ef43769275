package service

import (
	"context"
	"strings"
	"time"

	"munin/internal/memory"
)

// Bounds of the read calls.
const (
	DefaultRecallLimit  = 10
	MaxRecallLimit      = 50
	DefaultListLimit    = 50
	MaxListLimit        = 200
	DefaultHistoryLimit = 50
	MaxHistoryLimit     = 200
)

// GetResult is one version plus the slug's latest version number.
type GetResult struct {
	memory.Version
	LatestVersion int
}

// Recall searches the caller's project and logs the search.
func (s *Service) Recall(ctx context.Context, key memory.Key, q memory.SearchQuery) ([]memory.Hit, error) {
	return s.recall(ctx, key, q, true)
}

// recall is Recall; logged says whether the search log gets a row.
func (s *Service) recall(ctx context.Context, key memory.Key, q memory.SearchQuery, logged bool) ([]memory.Hit, error) {
	if err := readsMemory(key); err != nil {
		return nil, err
	}
	q.Text = strings.TrimSpace(q.Text)
	if q.Text == "" {
		return nil, memory.Errorf(memory.CodeInvalid, "query must not be empty")
	}
	if err := memory.ValidateText("query", q.Text, memory.MaxQuery); err != nil {
		return nil, err
	}
	limit, err := bounded("limit", q.Limit, DefaultRecallLimit, MaxRecallLimit)
	if err != nil {
		return nil, err
	}
	q.Limit = limit
	if err := memory.ValidateTags(q.Tags); err != nil {
		return nil, err
	}
	// The key's rate comes before the analysis of the query: a flood of
	// over-long queries must turn into cheap refusals, not analyses.
	release, err := s.recallLimit.acquire(key)
	if err != nil {
		return nil, err
	}
	defer release()
	// The index refuses a query of more than memory.MaxQueryTerms distinct
	// words: only its analysis knows them, and it analyzes the query once.
	start := time.Now()
	hits, err := s.index.Search(ctx, key.Project, q)
	if err != nil {
		return nil, s.internalErr("recall", key, err)
	}
	if logged && !s.opts.SearchLogOff {
		s.slog.add(memory.SearchLogRow{
			Project:    key.Project,
			Agent:      key.Agent,
			Query:      q.Text,
			Hits:       len(hits),
			DurationMS: float64(time.Since(start).Microseconds()) / 1000,
			At:         s.opts.Now().UTC(),
		})
	}
	return hits, nil
}

// Get returns the latest live version of a slug, or the given version.
func (s *Service) Get(ctx context.Context, key memory.Key, slug string, version int) (GetResult, error) {
	if err := readsMemory(key); err != nil {
		return GetResult{}, err
	}
	if err := memory.ValidateSlug(slug); err != nil {
		return GetResult{}, err
	}
	if version < 0 {
		return GetResult{}, memory.Errorf(memory.CodeInvalid, "version must be 1 or more, got %d", version)
	}
	v, latest, err := s.store.Get(ctx, key.Project, slug, version)
	if err != nil {
		return GetResult{}, s.internalErr("get", key, err)
	}
	if v.Deleted {
		if version == 0 {
			return GetResult{}, memory.Errorf(memory.CodeNotFound, "%s was forgotten at version %d; older versions are in its history", slug, v.Version)
		}
		return GetResult{}, memory.Errorf(memory.CodeNotFound, "version %d of %s is the tombstone written by forget", version, slug)
	}
	return GetResult{Version: v, LatestVersion: latest}, nil
}

// List pages through the live entries of the caller's project.
func (s *Service) List(ctx context.Context, key memory.Key, q memory.ListQuery) ([]memory.EntrySummary, string, error) {
	if err := readsMemory(key); err != nil {
		return nil, "", err
	}
	limit, err := bounded("limit", q.Limit, DefaultListLimit, MaxListLimit)
	if err != nil {
		return nil, "", err
	}
	q.Limit = limit
	if err := memory.ValidateText("prefix", q.Prefix, 128); err != nil {
		return nil, "", err
	}
	if q.Tag != "" {
		if err := memory.ValidateTags([]string{q.Tag}); err != nil {
			return nil, "", err
		}
	}
	if err := memory.ValidateText("cursor", q.Cursor, 512); err != nil {
		return nil, "", err
	}
	entries, next, err := s.store.List(ctx, key.Project, q)
	if err != nil {
		return nil, "", s.internalErr("list", key, err)
	}
	return entries, next, nil
}

// History lists a slug's versions, newest first, tombstones included.
func (s *Service) History(ctx context.Context, key memory.Key, slug string, limit int) ([]memory.VersionInfo, error) {
	if err := readsMemory(key); err != nil {
		return nil, err
	}
	if err := memory.ValidateSlug(slug); err != nil {
		return nil, err
	}
	limit, err := bounded("limit", limit, DefaultHistoryLimit, MaxHistoryLimit)
	if err != nil {
		return nil, err
	}
	versions, err := s.store.History(ctx, key.Project, slug, limit)
	if err != nil {
		return nil, s.internalErr("history", key, err)
	}
	if len(versions) == 0 {
		return nil, memory.Errorf(memory.CodeNotFound, "no entry %s", slug)
	}
	return versions, nil
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
