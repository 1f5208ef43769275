package service

import (
	"context"

	"munin/internal/memory"
)

// Roles, decided here and nowhere else:
//   - read and write keys use the memory of their own project;
//   - an admin key also administers its own project: its keys (an admin key
//     of it included), its write budget, its audit and search logs;
//   - a server-admin key administers every project (keys, budgets, new
//     workspaces and projects, metrics) but reads no memory: no entry, log
//     or snippet of any project. Only the command line creates one.
// A key never learns anything of a project it does not reach: such a project
// answers exactly as one that does not exist.

// errMemoryTools refuses a server-admin key every memory tool.
var errMemoryTools = memory.Errorf(memory.CodeForbidden, "a server-admin key administers the server; use a project key for memory tools")

// readsMemory refuses a server-admin key: it reads no entry, log or snippet.
func readsMemory(key memory.Key) error {
	if key.ServerAdmin() {
		return errMemoryTools
	}
	return nil
}

// writes refuses every key that cannot change entries, naming what it tried:
// a server-admin key with the words of every memory tool, a read key with
// its role.
func writes(key memory.Key, what string) error {
	return roleMay(key, key.Role.CanWrite(), what)
}

// proposes refuses what may not even propose (read keys); a propose key's
// remember and forget become proposals in the store.
func proposes(key memory.Key, what string) error {
	return roleMay(key, key.Role.CanPropose(), what)
}

// roleMay refuses a key that reads no memory, and one whose role may not
// (allowed false) do what, naming both.
func roleMay(key memory.Key, allowed bool, what string) error {
	if err := readsMemory(key); err != nil {
		return err
	}
	if !allowed {
		return memory.Errorf(memory.CodeForbidden, "key of %s has role %s and cannot %s", key.Agent, key.Role, what)
	}
	return nil
}

// administers refuses read and write keys.
func administers(key memory.Key, what string) error {
	if !key.Role.Administers() {
		return memory.Errorf(memory.CodeForbidden, "%s needs an admin key; the key of %s has role %s", what, key.Agent, key.Role)
	}
	return nil
}

// ReadMetrics refuses every key but a server-admin key: /metrics shows the
// load of every project, which is no project's business.
func ReadMetrics(c memory.Caller) error {
	if !c.ServerAdmin() {
		return memory.Errorf(memory.CodeForbidden, "metrics need a server-admin key (munin key create --server-admin)")
	}
	return nil
}

// notFound is the answer for a project the caller does not reach: the same words
// the store uses for one that does not exist (invariant 7,
// docs/architecture.md#invariant-7-a-caller-reaches-only-its-projects).
func notFound(ref memory.ProjectRef) error {
	return memory.Errorf(memory.CodeNotFound, "project %s not found", ref)
}

// The operator calls below are trusted: they are reached from the command
// line, whose user owns the data directory.

// CreateKey creates the workspace and project if new and a key for agent in it.
// It returns the token, shown once.
func (s *Service) CreateKey(ctx context.Context, ref memory.ProjectRef, agent string, role memory.Role) (string, memory.Key, error) {
	if err := ref.Validate(); err != nil {
		return "", memory.Key{}, err
	}
	if _, err := memory.ParseRole(string(role)); err != nil {
		return "", memory.Key{}, err
	}
	// Every check before EnsureProject: a refused key leaves no project behind.
	if err := memory.ValidateAgent(agent); err != nil {
		return "", memory.Key{}, err
	}
	if _, err := s.store.EnsureProject(ctx, ref); err != nil {
		return "", memory.Key{}, err
	}
	return s.store.CreateKey(ctx, ref, agent, role)
}

// CreateServerAdminKey creates a server-admin key and returns its token,
// shown once. Only the command line and the first start call it: no web,
// REST or MCP route reaches it.
func (s *Service) CreateServerAdminKey(ctx context.Context, agent string) (string, memory.Key, error) {
	return s.store.CreateServerAdminKey(ctx, agent)
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

// SetProjectWriteBudget is the operator form of SetWriteBudgets for writes.
func (s *Service) SetProjectWriteBudget(ctx context.Context, ref memory.ProjectRef, perHour int) error {
	if perHour < 0 {
		return memory.Errorf(memory.CodeInvalid, "write budget must be 0 (server default) or more, got %d", perHour)
	}
	if err := s.store.SetWriteBudget(ctx, ref, perHour); err != nil {
		return err
	}
	s.forgetBudget(ref)
	return nil
}

// SetProjectWriteBudgetBytes is the operator form of SetWriteBudgets for bytes.
func (s *Service) SetProjectWriteBudgetBytes(ctx context.Context, ref memory.ProjectRef, perHour int) error {
	if perHour < 0 {
		return memory.Errorf(memory.CodeInvalid, "write budget must be 0 bytes (server default) or more, got %d", perHour)
	}
	if err := s.store.SetWriteBudgetBytes(ctx, ref, perHour); err != nil {
		return err
	}
	s.forgetBudget(ref)
	return nil
}

// forgetBudget makes this server's budget read a changed project's limits
// again. A cluster's owners read them on every write.
func (s *Service) forgetBudget(ref memory.ProjectRef) {
	if s.budgeted != nil {
		s.budgeted.Forget(ref)
	}
}

// WriteUsage reports a project's writes this hour against its budget.
func (s *Service) WriteUsage(ctx context.Context, ref memory.ProjectRef) (used, limit int, err error) {
	u, err := s.budget.BudgetUsage(ctx, ref)
	return u.Writes, u.WriteLimit, err
}

// WriteUsageBytes reports a project's content bytes written this hour
// against its byte budget.
func (s *Service) WriteUsageBytes(ctx context.Context, ref memory.ProjectRef) (used, limit int, err error) {
	u, err := s.budget.BudgetUsage(ctx, ref)
	return u.Bytes, u.ByteLimit, err
}

// FlushSearchLog writes buffered search-log rows now.
func (s *Service) FlushSearchLog() { s.slog.Flush() }

// The calls below act for a caller's key and check its role.

// SetWriteBudgets sets the write budgets of a project of the caller (its
// first key's when project is ""; any project for a server-admin key):
// writes and content bytes per hour, each only if given. Only admin keys
// may, and above the server defaults only server-admin keys; both values are
// checked before either is set.
func (s *Service) SetWriteBudgets(ctx context.Context, c memory.Caller, project string, writesPerHour, bytesPerHour *int) error {
	key, err := s.adminTarget(ctx, c, project)
	if err != nil {
		return err
	}
	if err := administers(key, "setting the write budget"); err != nil {
		return err
	}
	switch {
	case writesPerHour == nil && bytesPerHour == nil:
		return memory.Errorf(memory.CodeInvalid, "give writes_per_hour, bytes_per_hour or both (0 means the server default)")
	case writesPerHour != nil && *writesPerHour < 0:
		return memory.Errorf(memory.CodeInvalid, "writes_per_hour must be 0 (server default) or more, got %d", *writesPerHour)
	case bytesPerHour != nil && *bytesPerHour < 0:
		return memory.Errorf(memory.CodeInvalid, "bytes_per_hour must be 0 (server default) or more, got %d", *bytesPerHour)
	}
	// The budget protects the server from one project, and agents often
	// hold their project's admin key: only a server admin lifts it above
	// the server default. Keeping a value the server admin set is no lift
	// (the settings form sends both values).
	if !key.ServerAdmin() {
		now, err := s.budget.BudgetUsage(ctx, key.Project)
		if err != nil {
			return err
		}
		if writesPerHour != nil && *writesPerHour > s.opts.DefaultWriteBudget && *writesPerHour != now.WriteLimit {
			return memory.Errorf(memory.CodeForbidden, "a project admin may set at most the server default of %d writes per hour (0 resets to it); a higher budget needs a server-admin key (the project's settings page in the web UI)", s.opts.DefaultWriteBudget)
		}
		if bytesPerHour != nil && *bytesPerHour > s.opts.DefaultWriteBudgetBytes && *bytesPerHour != now.ByteLimit {
			return memory.Errorf(memory.CodeForbidden, "a project admin may set at most the server default of %d bytes per hour (0 resets to it); a higher budget needs a server-admin key (the project's settings page in the web UI)", s.opts.DefaultWriteBudgetBytes)
		}
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

// adminTarget is the key an administrative call acts with: a server-admin
// key in the project named (which must exist), any other caller as target.
func (s *Service) adminTarget(ctx context.Context, c memory.Caller, project string) (memory.Key, error) {
	if !c.ServerAdmin() {
		return target(c, project)
	}
	if project == "" {
		return memory.Key{}, memory.Errorf(memory.CodeForbidden, "a server-admin key belongs to no project; name the project, or use its settings page in the web UI")
	}
	ref, err := memory.ParseProject("project", project)
	if err != nil {
		return memory.Key{}, err
	}
	return s.Scope(ctx, c, ref)
}

// Settings summarizes a project for its settings page (the write budget
// and this hour's writes); admin and server-admin keys only.
func (s *Service) Settings(ctx context.Context, c memory.Caller, ref memory.ProjectRef) (ProjectSummary, error) {
	key, err := s.Scope(ctx, c, ref)
	if err != nil {
		return ProjectSummary{}, err
	}
	if err := administers(key, "the settings page"); err != nil {
		return ProjectSummary{}, err
	}
	return s.summary(ctx, key)
}

// ProjectKeys lists the keys the caller administers (never a token): every
// key for a server-admin key, the keys of each project it holds an admin
// key for otherwise.
func (s *Service) ProjectKeys(ctx context.Context, c memory.Caller) ([]memory.Key, error) {
	admins := c.Administering()
	if len(admins) == 0 {
		return nil, administers(c.First(), "listing keys")
	}
	if c.ServerAdmin() {
		keys, err := s.ListKeys(ctx)
		if err != nil {
			return nil, s.internalErr("list keys", c.First(), err)
		}
		return keys, nil
	}
	var keys []memory.Key
	for _, admin := range admins {
		some, err := s.store.ListProjectKeys(ctx, admin.Project)
		if err != nil {
			return nil, s.internalErr("list keys", admin, err)
		}
		keys = append(keys, some...)
	}
	return keys, nil
}

// CreateProjectKey creates a key of a project role and returns the token,
// shown once. An admin key creates keys of its own project only; a
// server-admin key creates keys of any project, and the workspace and
// project with the first. Both are held to the project's key limits
// (keyLimit); only the command line is not.
func (s *Service) CreateProjectKey(ctx context.Context, c memory.Caller, ref memory.ProjectRef, agent string, role memory.Role) (string, memory.Key, error) {
	if len(c.Administering()) == 0 {
		return "", memory.Key{}, administers(c.First(), "creating keys")
	}
	if err := ref.Validate(); err != nil {
		return "", memory.Key{}, err
	}
	if _, err := memory.ParseRole(string(role)); err != nil {
		return "", memory.Key{}, err
	}
	key, ok := c.KeyFor(ref)
	if c.ServerAdmin() {
		key, ok = c.First(), true
	}
	if !ok {
		return "", memory.Key{}, notFound(ref)
	}
	if err := administers(key, "creating keys"); err != nil {
		return "", memory.Key{}, err
	}
	// Bad input is named as such even when the limits would refuse the key.
	if err := memory.ValidateAgent(agent); err != nil {
		return "", memory.Key{}, err
	}
	token, k, err := s.createLimited(ctx, ref, func() (string, memory.Key, error) {
		return s.CreateKey(ctx, ref, agent, role)
	})
	if err != nil {
		return "", memory.Key{}, s.internalErr("create key", key, err)
	}
	return token, k, nil
}

// RevokeProjectKey revokes a key by id; its sessions end at once. An admin
// key revokes keys of its own project only: any other id is not_found, as
// an unknown one. A server-admin key revokes any key.
func (s *Service) RevokeProjectKey(ctx context.Context, c memory.Caller, id int64) error {
	admins := c.Administering()
	if len(admins) == 0 {
		return administers(c.First(), "revoking keys")
	}
	if c.ServerAdmin() {
		if err := s.RevokeKey(ctx, id); err != nil {
			return s.internalErr("revoke key", c.First(), err)
		}
		return nil
	}
	var err error
	for _, admin := range admins {
		err = s.store.RevokeProjectKey(ctx, admin.Project, id)
		if memory.ErrorCode(err) != memory.CodeNotFound {
			break
		}
	}
	if err != nil {
		return s.internalErr("revoke key", admins[0], err)
	}
	return nil
}

// DefaultProject is created with an admin key on the first start of an empty data directory.
var DefaultProject = memory.ProjectRef{Workspace: "default", Project: "default"}

// FirstKeys are the keys the first start of an empty data directory creates.
type FirstKeys struct {
	// ServerAdmin administers the server: the web UI's overview and keys, /metrics.
	ServerAdmin string
	// Project is an admin key of DefaultProject, for an agent's client configuration.
	Project string
}

// BootstrapKeys creates default/default with an admin key, and a
// server-admin key, when no project exists yet, so that the first
// `munin serve` is all a new user needs. It returns zero keys when the data
// directory was not empty.
func (s *Service) BootstrapKeys(ctx context.Context) (FirstKeys, error) {
	projects, err := s.store.ListProjects(ctx)
	if err != nil || len(projects) > 0 {
		return FirstKeys{}, err
	}
	var k FirstKeys
	// The server-admin key first: should the project key fail, the next
	// start (still without a project) makes both again.
	if k.ServerAdmin, _, err = s.CreateServerAdminKey(ctx, "operator"); err != nil {
		return FirstKeys{}, err
	}
	if k.Project, _, err = s.CreateKey(ctx, DefaultProject, "first-admin", memory.RoleAdmin); err != nil {
		return FirstKeys{}, err
	}
	return k, nil
}

// Bootstrap is BootstrapKeys for callers that need only the project key
// (tests and tools that talk to the memory).
func (s *Service) Bootstrap(ctx context.Context) (string, error) {
	k, err := s.BootstrapKeys(ctx)
	return k.Project, err
}

// Ready reports whether storage answers; the readiness probe calls it.
func (s *Service) Ready(ctx context.Context) error {
	if s.opts.Ready != nil {
		if err := s.opts.Ready(ctx); err != nil {
			return err
		}
	}
	_, err := s.store.ListProjects(ctx)
	return err
}
