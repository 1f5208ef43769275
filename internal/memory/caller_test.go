package memory

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

var (
	refA = ProjectRef{Workspace: "acme", Project: "a"}
	refB = ProjectRef{Workspace: "acme", Project: "b"}
	refC = ProjectRef{Workspace: "other", Project: "c"}
)

func key(id int64, ref ProjectRef, agent string, role Role) Key {
	return Key{ID: id, Project: ref, Agent: agent, Role: role}
}

// ids returns the ids of c's keys in order.
func ids(c Caller) []int64 {
	var out []int64
	for _, k := range c.Keys() {
		out = append(out, k.ID)
	}
	return out
}

// TestNewCallerKeepsOrderAndOneKeyPerProject: keys keep the order given,
// the first one is where calls without a project act, and a second key for
// a project held already replaces the first only with a higher role, in the
// first one's place.
func TestNewCallerKeepsOrderAndOneKeyPerProject(t *testing.T) {
	for _, tc := range []struct {
		name  string
		keys  []Key
		want  []int64
		first int64
	}{
		{"one", []Key{key(7, refA, "x", RoleRead)}, []int64{7}, 7},
		{"order kept", []Key{key(3, refB, "x", RoleRead), key(1, refA, "x", RoleRead), key(2, refC, "x", RoleRead)}, []int64{3, 1, 2}, 3},
		{"same key twice", []Key{key(1, refA, "x", RoleWrite), key(1, refA, "x", RoleWrite)}, []int64{1}, 1},
		{"higher later takes the place", []Key{key(1, refA, "r", RoleRead), key(2, refB, "w", RoleWrite), key(3, refA, "adm", RoleAdmin)}, []int64{3, 2}, 3},
		{"lower later ignored", []Key{key(1, refA, "adm", RoleAdmin), key(2, refB, "w", RoleWrite), key(3, refA, "r", RoleRead)}, []int64{1, 2}, 1},
		{"equal role keeps the first", []Key{key(1, refA, "w1", RoleWrite), key(2, refA, "w2", RoleWrite)}, []int64{1}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCaller(tc.keys...)
			if got := ids(c); !slices.Equal(got, tc.want) {
				t.Errorf("keys %v, want %v", got, tc.want)
			}
			if c.First().ID != tc.first {
				t.Errorf("first key %d, want %d", c.First().ID, tc.first)
			}
		})
	}
}

// TestCallerHigherRoleWinsInAnyOrder: of two keys for one project the higher
// role decides the role and the agent there, whichever came first.
func TestCallerHigherRoleWinsInAnyOrder(t *testing.T) {
	roles := []Role{RoleRead, RoleWrite, RoleAdmin}
	for i, lo := range roles {
		for _, hi := range roles[i+1:] {
			low, high := key(1, refA, "low", lo), key(2, refA, "high", hi)
			for _, order := range [][]Key{{low, high}, {high, low}} {
				k, ok := NewCaller(order...).KeyFor(refA)
				if !ok || k.Role != hi || k.Agent != "high" {
					t.Errorf("%s then %s: key for %s = %+v, %v; want the %s key", order[0].Role, order[1].Role, refA, k, ok, hi)
				}
			}
		}
	}
}

// TestCallerOwnerIgnoresOrder: a session belongs to the set of keys; the
// same keys in another order (or repeated) are the same owner, ids sorted
// as numbers.
func TestCallerOwnerIgnoresOrder(t *testing.T) {
	a, b, c := key(17, refA, "x", RoleRead), key(3, refB, "x", RoleRead), key(200, refC, "x", RoleRead)
	want := "3,17,200"
	for _, order := range [][]Key{{a, b, c}, {c, b, a}, {b, a, c}, {a, b, c, a}} {
		if got := NewCaller(order...).Owner(); got != want {
			t.Errorf("owner of %v = %q, want %q", ids(NewCaller(order...)), got, want)
		}
	}
	if NewCaller(a, b).Owner() == NewCaller(a, b, c).Owner() {
		t.Error("two sets of keys share an owner")
	}
	if got := NewCaller(a).Owner(); got != "17" {
		t.Errorf("owner of one key = %q", got)
	}
}

// TestCallerAccessors: what a caller reaches, and that its keys cannot be
// changed through what it returns.
func TestCallerAccessors(t *testing.T) {
	var zero Caller
	if !zero.Empty() || zero.First() != (Key{}) || len(zero.Projects()) != 0 || zero.ServerAdmin() || zero.Owner() != "" {
		t.Errorf("zero caller: empty %v, first %+v, projects %v, owner %q", zero.Empty(), zero.First(), zero.Projects(), zero.Owner())
	}
	if _, ok := zero.KeyFor(refA); ok {
		t.Error("zero caller holds a key for acme/a")
	}

	c := NewCaller(key(1, refB, "bee", RoleWrite), key(2, refA, "ay", RoleRead))
	if c.Empty() || c.ServerAdmin() {
		t.Errorf("caller of two keys: empty %v, server admin %v", c.Empty(), c.ServerAdmin())
	}
	if got := c.Projects(); !slices.Equal(got, []ProjectRef{refB, refA}) {
		t.Errorf("projects %v, want [acme/b acme/a]", got)
	}
	if _, ok := c.KeyFor(refC); ok {
		t.Error("caller holds a key for other/c")
	}
	if got := c.Agents(); got != "bee@acme/b,ay@acme/a" {
		t.Errorf("agents %q", got)
	}
	keys := c.Keys()
	keys[0].Role = RoleAdmin
	if k, _ := c.KeyFor(refB); k.Role != RoleWrite {
		t.Error("changing the slice Keys returned changed the caller")
	}

	srv := NewCaller(Key{ID: 9, Agent: "ops", Role: RoleServerAdmin})
	if !srv.ServerAdmin() || len(srv.Projects()) != 0 {
		t.Errorf("server-admin caller: server admin %v, projects %v", srv.ServerAdmin(), srv.Projects())
	}
	if _, ok := srv.KeyFor(ProjectRef{}); ok {
		t.Error("a server-admin key counts as a key of the zero project")
	}
	if got := srv.Agents(); got != "ops@server" {
		t.Errorf("server-admin agents %q", got)
	}
}

// TestParseProject: "workspace/project" with two valid names; anything else
// is invalid, naming the field and the value (clipped, valid UTF-8).
func TestParseProject(t *testing.T) {
	for _, ok := range []string{"acme/x", "a/b", "0/9", "team-1/backend-api", strings.Repeat("a", 63) + "/" + strings.Repeat("b", 63)} {
		ref, err := ParseProject("project", ok)
		if err != nil || ref.String() != ok {
			t.Errorf("ParseProject(%q) = %v, %v", ok, ref, err)
		}
	}
	for _, bad := range []string{
		"", "a", "/", "acme/", "/x", "ACME/x", "acme/X", "a/b/c", "a//b", "../x", "acme/..", " acme/x", "acme/x ",
		"acme /x", "-a/x", "acme/-x", "a_b/x", "äcme/x", "acme\x00/x", "acme/x\n",
		strings.Repeat("a", 64) + "/x", "acme/" + strings.Repeat("b", 64),
		strings.Repeat("a", 200), strings.Repeat("a", 99) + "/" + strings.Repeat("b", 100), strings.Repeat("ä", 100),
	} {
		_, err := ParseProject("project", bad)
		if ErrorCode(err) != CodeInvalid {
			t.Errorf("ParseProject(%q) = %v, want invalid", bad, err)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, `invalid: project "`) || !strings.Contains(msg, `"workspace/project"`) || !utf8.ValidString(msg) || len(msg) > 300 {
			t.Errorf("ParseProject(%q) message %q: want invalid naming the field project and the form, valid UTF-8, short", bad, msg)
		}
	}
	if _, err := ParseProject("scope", "x"); err == nil || !strings.HasPrefix(err.Error(), `invalid: scope "x"`) {
		t.Errorf("the field is named as given: %v", err)
	}
}

// TestWithClientMarksACopy: WithClient names the client on the caller it
// returns, keeps its keys and the person mark, and leaves the caller it was
// called on without one; keys and web sessions name none.
func TestWithClientMarksACopy(t *testing.T) {
	key := NewCaller(Key{ID: 1, Agent: "a", Role: RoleWrite, Project: ProjectRef{Workspace: "w", Project: "p"}})
	token := key.WithClient("Claude")
	if token.Client() != "Claude" || key.Client() != "" {
		t.Fatalf("token client %q, key client %q; want only the copy marked", token.Client(), key.Client())
	}
	if token.Owner() != key.Owner() || token.First() != key.First() || token.Person() {
		t.Errorf("WithClient changed the keys or the person mark: %+v", token.Keys())
	}
	if p := key.AsPerson().WithClient("Claude"); !p.Person() || p.Client() != "Claude" {
		t.Errorf("person %v client %q; want both kept", p.Person(), p.Client())
	}
	if (Caller{}).Client() != "" {
		t.Error("a zero caller names a client")
	}
}
