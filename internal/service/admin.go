package service

import (
	"context"

	"munin/internal/memory"
)

// The operator calls below are trusted: they are reached from the command line
// (whoever runs it owns the data directory) or, later, by an admin key.

// CreateKey creates the workspace and project if new and a key for agent in it.
// It returns the token, shown once.
func (s *Service) CreateKey(ctx context.Context, ref memory.ProjectRef, agent string, role memory.Role) (string, memory.Key, error) {
	if err := ref.Validate(); err != nil {
		return "", memory.Key{}, err
	}
	if _, err := memory.ParseRole(string(role)); err != nil {
		return "", memory.Key{}, err
	}
	if _, err := s.store.EnsureProject(ctx, ref); err != nil {
		return "", memory.Key{}, err
	}
	return s.store.CreateKey(ctx, ref, agent, role)
}

// ListKeys returns every key (never a token).
func (s *Service) ListKeys(ctx context.Context) ([]memory.Key, error) {
	return s.store.ListKeys(ctx)
}

// RevokeKey revokes a key by id; its next request is refused.
func (s *Service) RevokeKey(ctx context.Context, id int64) error {
	return s.store.RevokeKey(ctx, id)
}

// ListProjects returns all projects of all workspaces.
func (s *Service) ListProjects(ctx context.Context) ([]memory.ProjectInfo, error) {
	return s.store.ListProjects(ctx)
}

// SetWriteBudget sets a project's writes per hour; the caller must hold an
// admin key of that project.
func (s *Service) SetWriteBudget(ctx context.Context, key memory.Key, perHour int) error {
	if key.Role != memory.RoleAdmin {
		return memory.Errorf(memory.CodeForbidden, "setting the write budget needs an admin key")
	}
	return s.SetProjectWriteBudget(ctx, key.Project, perHour)
}

// SetProjectWriteBudget is the operator form of SetWriteBudget.
func (s *Service) SetProjectWriteBudget(ctx context.Context, ref memory.ProjectRef, perHour int) error {
	if perHour < 0 {
		return memory.Errorf(memory.CodeInvalid, "write budget must be 0 (server default) or more, got %d", perHour)
	}
	if err := s.store.SetWriteBudget(ctx, ref, perHour); err != nil {
		return err
	}
	s.budget.forget(ref)
	return nil
}

// SetWriteBudgets sets a project's writes and content bytes per hour, each
// only if given; the caller must hold an admin key of that project. Both are
// checked before either is set.
func (s *Service) SetWriteBudgets(ctx context.Context, key memory.Key, writesPerHour, bytesPerHour *int) error {
	switch {
	case key.Role != memory.RoleAdmin:
		return memory.Errorf(memory.CodeForbidden, "setting the write budget needs an admin key")
	case writesPerHour == nil && bytesPerHour == nil:
		return memory.Errorf(memory.CodeInvalid, "give writes_per_hour, bytes_per_hour or both (0 means the server default)")
	case writesPerHour != nil && *writesPerHour < 0:
		return memory.Errorf(memory.CodeInvalid, "writes_per_hour must be 0 (server default) or more, got %d", *writesPerHour)
	case bytesPerHour != nil && *bytesPerHour < 0:
		return memory.Errorf(memory.CodeInvalid, "bytes_per_hour must be 0 (server default) or more, got %d", *bytesPerHour)
	}
	if writesPerHour != nil {
		if err := s.SetProjectWriteBudget(ctx, key.Project, *writesPerHour); err != nil {
			return err
		}
	}
	if bytesPerHour != nil {
		return s.SetProjectWriteBudgetBytes(ctx, key.Project, *bytesPerHour)
	}
	return nil
}

// SetWriteBudgetBytes sets a project's content bytes per hour; the caller
// must hold an admin key of that project.
func (s *Service) SetWriteBudgetBytes(ctx context.Context, key memory.Key, perHour int) error {
	if key.Role != memory.RoleAdmin {
		return memory.Errorf(memory.CodeForbidden, "setting the write budget needs an admin key")
	}
	return s.SetProjectWriteBudgetBytes(ctx, key.Project, perHour)
}

// SetProjectWriteBudgetBytes is the operator form of SetWriteBudgetBytes.
func (s *Service) SetProjectWriteBudgetBytes(ctx context.Context, ref memory.ProjectRef, perHour int) error {
	if perHour < 0 {
		return memory.Errorf(memory.CodeInvalid, "write budget must be 0 bytes (server default) or more, got %d", perHour)
	}
	if err := s.store.SetWriteBudgetBytes(ctx, ref, perHour); err != nil {
		return err
	}
	s.budget.forget(ref)
	return nil
}

// WriteUsage reports a project's writes this hour against its budget.
func (s *Service) WriteUsage(ctx context.Context, ref memory.ProjectRef) (used, limit int, err error) {
	w, err := s.budget.usage(ctx, ref)
	return w.used, w.limit.writes, err
}

// WriteUsageBytes reports a project's content bytes written this hour
// against its byte budget.
func (s *Service) WriteUsageBytes(ctx context.Context, ref memory.ProjectRef) (used, limit int, err error) {
	w, err := s.budget.usage(ctx, ref)
	return w.bytes, w.limit.bytes, err
}

// FlushSearchLog writes buffered search-log rows now.
func (s *Service) FlushSearchLog() { s.slog.Flush() }

// DefaultProject is created with an admin key on the first start of an empty data directory.
var DefaultProject = memory.ProjectRef{Workspace: "default", Project: "default"}

// Bootstrap creates default/default and an admin key when no project exists
// yet, so that the first `munin serve` is all a new user needs. It returns the
// token, or "" when the data directory was not empty.
func (s *Service) Bootstrap(ctx context.Context) (string, error) {
	projects, err := s.store.ListProjects(ctx)
	if err != nil {
		return "", err
	}
	if len(projects) > 0 {
		return "", nil
	}
	token, _, err := s.CreateKey(ctx, DefaultProject, "admin", memory.RoleAdmin)
	return token, err
}

// Ready reports whether storage answers; the readiness probe calls it.
func (s *Service) Ready(ctx context.Context) error {
	_, err := s.store.ListProjects(ctx)
	return err
}
