package service

import (
	"context"

	"munin/internal/memory"
)

// Scope returns key acting in project ref, for callers that address projects
// explicitly (the web UI). A key acts in its own project; an admin key acts in
// every project, with its own agent name and role. The project must exist.
// Every use case then runs with the returned key exactly as for MCP.
func (s *Service) Scope(ctx context.Context, key memory.Key, ref memory.ProjectRef) (memory.Key, error) {
	if err := ref.Validate(); err != nil {
		return memory.Key{}, err
	}
	if ref != key.Project && key.Role != memory.RoleAdmin {
		return memory.Key{}, memory.Errorf(memory.CodeForbidden, "key of %s is bound to project %s", key.Agent, key.Project)
	}
	if _, err := s.store.Project(ctx, ref); err != nil {
		return memory.Key{}, s.internalErr("scope", key, err)
	}
	key.Project = ref
	return key, nil
}
