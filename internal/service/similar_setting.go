package service

import (
	"context"

	"munin/internal/memory"
)

// The similar setting: whether remember's answer carries the duplicate hint
// (similar) for a new slug of a project. On by default; a project switches
// it off when its agents write alike entries on purpose, or to save the
// lookup. The writer reports the setting with every write
// (memory.WriteResult.SimilarOff), so the hint reads nothing to learn it.

// SetSimilar sets a project's similar setting (memory.SimilarOn or
// memory.SimilarOff): an admin key of the project, or a server-admin key.
func (s *Service) SetSimilar(ctx context.Context, c memory.Caller, ref memory.ProjectRef, similar string) error {
	return s.setSetting(ctx, c, ref, similarSetting, similar)
}

// SetSimilarOf is SetSimilar for a project named "workspace/project" ("":
// the caller's first key's), as REST names it.
func (s *Service) SetSimilarOf(ctx context.Context, c memory.Caller, project, similar string) error {
	return s.setSettingOf(ctx, c, project, similarSetting, similar)
}

// SetProjectSimilar is the operator form of SetSimilar (the command line).
func (s *Service) SetProjectSimilar(ctx context.Context, ref memory.ProjectRef, similar string) error {
	return s.setProjectSetting(ctx, ref, similarSetting, similar)
}

// ProjectSimilar reads a project's similar setting: any key of the
// project, or a server-admin key.
func (s *Service) ProjectSimilar(ctx context.Context, c memory.Caller, ref memory.ProjectRef) (string, error) {
	return s.projectSetting(ctx, c, ref, similarSetting)
}
