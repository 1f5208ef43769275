package memory

import "time"

// Role is what a key may do in its project.
type Role string

// The roles, from least to most.
const (
	RoleRead  Role = "read"
	RoleWrite Role = "write"
	RoleAdmin Role = "admin"
)

// ParseRole checks a role name.
func ParseRole(s string) (Role, error) {
	switch Role(s) {
	case RoleRead, RoleWrite, RoleAdmin:
		return Role(s), nil
	}
	return "", Errorf(CodeInvalid, "role %q must be read, write or admin", s)
}

// CanWrite reports whether the role may change entries.
func (r Role) CanWrite() bool { return r == RoleWrite || r == RoleAdmin }

// KeyPrefix starts every key so that people and secret scanners recognize it.
const KeyPrefix = "munin_"

// Key is a stored key: never the token itself, only what it grants.
type Key struct {
	ID         int64      `json:"id"`
	Project    ProjectRef `json:"-"`
	Agent      string     `json:"agent"`
	Role       Role       `json:"role"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	Revoked    bool       `json:"revoked"`
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
