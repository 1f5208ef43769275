package service

import (
	"context"

	"munin/internal/memory"
)

// A project's settings: review (do the writes of its write keys wait as
// proposals, review.go) and similar (does remember look for duplicates of a
// new slug, similar_setting.go). Both are set the same way — by an admin
// key of the project or a server-admin key, through the workspace's
// writer — and read by any key of the project.

// setting is one project setting: how a value is checked, how the store
// sets and reads it, and how messages name it.
type setting struct {
	name  string // in logs: "review", "similar"
	what  string // in the forbidden message: "setting the review"
	parse func(string) (string, error)
	set   func(Store, context.Context, memory.ProjectRef, string) error
	get   func(Store, context.Context, memory.ProjectRef) (string, error)
}

var (
	reviewSetting  = setting{"review", "setting the review", memory.ParseReview, Store.SetReview, Store.Review}
	similarSetting = setting{"similar", "setting similar", memory.ParseSimilarSetting, Store.SetSimilar, Store.SimilarSetting}
)

// setSetting sets a setting of ref for caller c (the web UI).
func (s *Service) setSetting(ctx context.Context, c memory.Caller, ref memory.ProjectRef, st setting, value string) error {
	key, err := s.Scope(ctx, c, ref)
	if err != nil {
		return err
	}
	return s.setSettingFor(ctx, key, st, value)
}

// setSettingOf sets a setting of a project named "workspace/project" ("":
// the caller's first key's), as REST names it.
func (s *Service) setSettingOf(ctx context.Context, c memory.Caller, project string, st setting, value string) error {
	key, err := s.adminTarget(ctx, c, project)
	if err != nil {
		return err
	}
	return s.setSettingFor(ctx, key, st, value)
}

// setSettingFor sets a setting of key's project if key administers it.
func (s *Service) setSettingFor(ctx context.Context, key memory.Key, st setting, value string) error {
	if err := administers(key, st.what); err != nil {
		return err
	}
	return s.setProjectSetting(ctx, key.Project, st, value)
}

// setProjectSetting sets a setting of ref without a caller (the operator's
// command line). A bad value is refused before anything is written
// (docs/architecture.md#invariant-6-bad-input-changes-nothing).
func (s *Service) setProjectSetting(ctx context.Context, ref memory.ProjectRef, st setting, value string) error {
	if _, err := st.parse(value); err != nil {
		return err
	}
	if err := st.set(s.store, ctx, ref, value); err != nil {
		return s.internalErr("set "+st.name, memory.Key{Project: ref}, err)
	}
	return nil
}

// projectSetting reads a setting of ref: any key of the project, or a
// server-admin key.
func (s *Service) projectSetting(ctx context.Context, c memory.Caller, ref memory.ProjectRef, st setting) (string, error) {
	key, err := s.Scope(ctx, c, ref)
	if err != nil {
		return "", err
	}
	value, err := st.get(s.store, ctx, key.Project)
	if err != nil {
		return "", s.internalErr(st.name, key, err)
	}
	return value, nil
}
