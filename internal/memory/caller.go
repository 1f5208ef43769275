package memory

import (
	"slices"
	"strconv"
	"strings"
)

// Caller is who makes a request: one or more keys, each for its own project.
// The first key's project is where calls without a project act. Of two keys
// for one project the higher role counts (and names the agent there).
type Caller struct {
	keys []Key
	// person: a person in the web UI, not an agent (see AsPerson).
	person bool
	// client: the OAuth client a token was issued to (see WithClient).
	client string
}

// WithClient returns c marked as acting through the OAuth client named
// name (the grant's client name, e.g. "Claude"). A token acts exactly as
// its keys, so the agent of every write stays the key's; the audit log
// records the client beside it, so that a reader of the audit trail can
// tell a write an app made on the person's behalf from one made with the
// key itself.
func (c Caller) WithClient(name string) Caller {
	c.keys = slices.Clone(c.keys)
	c.client = name
	return c
}

// Client names the OAuth client c acts through (see WithClient): empty for
// keys and web sessions.
func (c Caller) Client() string { return c.client }

// AsPerson returns c marked as a person signed in to the web UI. A person
// with a write or admin key writes directly even where the project reviews
// the writes of agents; the web UI marks its callers so, nothing else does.
func (c Caller) AsPerson() Caller {
	c.keys = slices.Clone(c.keys)
	c.person = true
	return c
}

// Person reports whether c was marked by AsPerson.
func (c Caller) Person() bool { return c.person }

// NewCaller builds the caller of keys in the order given: a later key for a
// project already held replaces the earlier one only if its role is higher,
// and keeps the earlier one's place.
func NewCaller(keys ...Key) Caller {
	var c Caller
	for _, k := range keys {
		i := slices.IndexFunc(c.keys, func(o Key) bool { return o.Project == k.Project })
		switch {
		case i < 0:
			c.keys = append(c.keys, k)
		case roleRank(k.Role) > roleRank(c.keys[i].Role):
			c.keys[i] = k
		}
	}
	return c
}

// roleRank orders the project roles from least to most.
func roleRank(r Role) int {
	switch r {
	case RoleRead:
		return 1
	case RolePropose:
		return 2
	case RoleWrite:
		return 3
	case RoleAdmin:
		return 4
	case RoleServerAdmin:
		return 5
	}
	return 0
}

// Keys returns the caller's keys, one per project, the first one first.
func (c Caller) Keys() []Key { return slices.Clone(c.keys) }

// Empty reports whether the caller holds no key (a zero Caller).
func (c Caller) Empty() bool { return len(c.keys) == 0 }

// First returns the first key: the one whose project calls without a project
// act in (zero Key for an empty caller).
func (c Caller) First() Key {
	if len(c.keys) == 0 {
		return Key{}
	}
	return c.keys[0]
}

// KeyFor returns the caller's key for ref.
func (c Caller) KeyFor(ref ProjectRef) (Key, bool) {
	for _, k := range c.keys {
		if k.Project == ref && !k.ServerAdmin() {
			return k, true
		}
	}
	return Key{}, false
}

// ServerAdmin reports whether the caller is a server-admin key (which is
// always used alone).
func (c Caller) ServerAdmin() bool { return len(c.keys) == 1 && c.keys[0].ServerAdmin() }

// Administering returns the caller's keys that administer their project
// (or, for a server-admin key, every project), in key order.
func (c Caller) Administering() []Key {
	var out []Key
	for _, k := range c.keys {
		if k.Role.Administers() {
			out = append(out, k)
		}
	}
	return out
}

// Projects returns the projects the caller holds a key for, in key order.
func (c Caller) Projects() []ProjectRef {
	out := make([]ProjectRef, 0, len(c.keys))
	for _, k := range c.keys {
		if !k.ServerAdmin() {
			out = append(out, k.Project)
		}
	}
	return out
}

// Owner names the set of keys (sorted ids): what an MCP session or a web
// session belongs to. The same keys in another order are the same owner.
func (c Caller) Owner() string {
	ids := make([]int64, len(c.keys))
	for i, k := range c.keys {
		ids[i] = k.ID
	}
	slices.Sort(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(parts, ",")
}

// Agents names the caller for logs: "agent@workspace/project", comma-separated.
func (c Caller) Agents() string {
	parts := make([]string, len(c.keys))
	for i, k := range c.keys {
		parts[i] = k.Agent + "@" + k.ProjectLabel()
	}
	return strings.Join(parts, ",")
}

// ParseProject reads a "workspace/project" argument; field names it in the error.
func ParseProject(field, s string) (ProjectRef, error) {
	ws, p, ok := strings.Cut(s, "/")
	if !ok || strings.Contains(p, "/") || len(s) > 2*64+1 {
		return ProjectRef{}, Errorf(CodeInvalid, "%s %q must be \"workspace/project\" (lowercase letters, digits and -)", field, clip(s, 80))
	}
	ref := ProjectRef{Workspace: ws, Project: p}
	if ValidateName("workspace", ws) != nil || ValidateName("project", p) != nil {
		return ProjectRef{}, Errorf(CodeInvalid, "%s %q must be \"workspace/project\", each name matching ^[a-z0-9][a-z0-9-]{0,62}$", field, clip(s, 80))
	}
	return ref, nil
}

// clip shortens s to at most n bytes for an error message, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
