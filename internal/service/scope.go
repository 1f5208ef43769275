package service

import (
	"context"

	"munin/internal/memory"
)

// Scope returns key acting in project ref, for callers that address projects
// explicitly (the web UI). A project key acts in its own project only: any
// other project is not_found, the same answer as for one that does not exist.
// A server-admin key acts in every existing project, still as a server-admin
// key, so the use cases below refuse it every entry and log. Every use case
// then runs with the returned key exactly as for MCP.
func (s *Service) Scope(ctx context.Context, key memory.Key, ref memory.ProjectRef) (memory.Key, error) {
	if err := ref.Validate(); err != nil {
		return memory.Key{}, err
	}
	if ref != key.Project && !key.ServerAdmin() {
		return memory.Key{}, notFound(ref)
	}
	if _, err := s.store.Project(ctx, ref); err != nil {
		return memory.Key{}, s.internalErr("scope", key, err)
	}
	key.Project = ref
	return key, nil
}

// ScopeWriter is Scope for what only a writer can use, such as the web UI's
// entry forms: a key that cannot change ref's entries is refused here,
// instead of being shown a form whose save the service would refuse.
func (s *Service) ScopeWriter(ctx context.Context, key memory.Key, ref memory.ProjectRef) (memory.Key, error) {
	key, err := s.Scope(ctx, key, ref)
	if err != nil {
		return memory.Key{}, err
	}
	if err := writes(key, "change entries"); err != nil {
		return memory.Key{}, err
	}
	return key, nil
}
