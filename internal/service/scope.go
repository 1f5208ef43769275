package service

import (
	"context"

	"munin/internal/memory"
)

// Scope returns the key the caller acts with in project ref, for callers
// that address projects explicitly (the web UI): its key for ref, whose role
// decides what it may do there. A project the caller holds no key for is
// not_found, the same answer as for one that does not exist. A server-admin
// key acts in every existing project, still as a server-admin key, so the
// use cases refuse it every entry and log.
func (s *Service) Scope(ctx context.Context, c memory.Caller, ref memory.ProjectRef) (memory.Key, error) {
	if err := ref.Validate(); err != nil {
		return memory.Key{}, err
	}
	key, ok := c.KeyFor(ref)
	if c.ServerAdmin() {
		key, ok = c.First(), true
		key.Project = ref
	}
	if !ok {
		return memory.Key{}, notFound(ref)
	}
	if _, err := s.store.Project(ctx, ref); err != nil {
		return memory.Key{}, s.internalErr("scope", key, err)
	}
	return key, nil
}

// ScopeWriter is Scope for what only a writer can use, such as the web UI's
// entry forms: a key that cannot change ref's entries is refused here,
// instead of being shown a form whose save the service would refuse.
func (s *Service) ScopeWriter(ctx context.Context, c memory.Caller, ref memory.ProjectRef) (memory.Key, error) {
	key, err := s.Scope(ctx, c, ref)
	if err != nil {
		return memory.Key{}, err
	}
	if err := writes(key, "change entries"); err != nil {
		return memory.Key{}, err
	}
	return key, nil
}

// reader is Scope for what reads a project's memory (entries, logs).
func (s *Service) reader(ctx context.Context, c memory.Caller, ref memory.ProjectRef) (memory.Key, error) {
	key, err := s.Scope(ctx, c, ref)
	if err != nil {
		return memory.Key{}, err
	}
	return key, readsMemory(key)
}
