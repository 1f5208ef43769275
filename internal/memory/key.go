package memory

import "time"

// Role is what a key may do: in its project (read, propose, write, admin),
// or across the server without reading any memory (server-admin).
type Role string

// The project roles, from least to most, and the server role.
const (
	RoleRead Role = "read"
	// RolePropose reads, and its remember and forget become proposals that
	// wait for review (see Proposal) instead of versions.
	RolePropose Role = "propose"
	RoleWrite   Role = "write"
	// RoleAdmin administers its own project: its keys, budget and logs.
	RoleAdmin Role = "admin"
	// RoleServerAdmin administers the whole server (every project's keys and
	// budgets, new workspaces and projects, metrics) but reads no memory. It
	// belongs to no project, and only the command line creates one.
	RoleServerAdmin Role = "server-admin"
)

// ParseRole checks the name of a project role. A server-admin key is never
// made from a role name: only `munin key create --server-admin` makes one.
func ParseRole(s string) (Role, error) {
	switch Role(s) {
	case RoleRead, RolePropose, RoleWrite, RoleAdmin:
		return Role(s), nil
	case RoleServerAdmin:
		return "", Errorf(CodeInvalid, "role %q is not a project role: only the command line creates a server-admin key (munin key create --server-admin --agent NAME)", s)
	}
	return "", Errorf(CodeInvalid, "role %q must be read, propose, write or admin", s)
}

// CanWrite reports whether the role may change entries (directly, or as a
// proposal when its project reviews the writes of agents).
func (r Role) CanWrite() bool { return r == RoleWrite || r == RoleAdmin }

// CanPropose reports whether the role's remember and forget are accepted:
// as versions or as proposals.
func (r Role) CanPropose() bool { return r == RolePropose || r.CanWrite() }

// Reviews reports whether the role may approve and reject proposals and
// always writes directly.
func (r Role) Reviews() bool { return r == RoleAdmin }

// ReviewsAsPerson reports whether a person signed in to the web UI with the
// role may approve and reject: an admin, and a write key, whose person
// writes directly there anyway — deciding a proposal lets them do nothing
// they could not do by writing its text themselves. An agent's write key
// never decides (Reviews).
func (r Role) ReviewsAsPerson() bool { return r.Reviews() || r == RoleWrite }

// Administers reports whether the role manages keys and budgets: of its own
// project (admin) or of every project (server-admin).
func (r Role) Administers() bool { return r == RoleAdmin || r == RoleServerAdmin }

// KeyPrefix starts every key so that people and secret scanners recognize it.
const KeyPrefix = "munin_"

// Key is a stored key: never the token itself, only what it grants.
type Key struct {
	ID int64 `json:"id"`
	// Project is the key's project; zero for a server-admin key.
	Project    ProjectRef `json:"-"`
	Agent      string     `json:"agent"`
	Role       Role       `json:"role"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	Revoked    bool       `json:"revoked"`
}

// ServerAdmin reports whether k is a server-admin key.
func (k Key) ServerAdmin() bool { return k.Role == RoleServerAdmin }

// ProjectLabel names the key's project for logs and pages: "workspace/project",
// or "server" for a server-admin key that belongs to none.
func (k Key) ProjectLabel() string {
	if k.Project == (ProjectRef{}) {
		return "server"
	}
	return k.Project.String()
}

// ProjectInfo describes a project for listings.
type ProjectInfo struct {
	Ref ProjectRef
	// WriteBudget is the writes allowed per hour; 0 means the server default.
	WriteBudget int
	// WriteBudgetBytes is the content bytes allowed per hour; 0 means the server default.
	WriteBudgetBytes int
	CreatedAt        time.Time
}
