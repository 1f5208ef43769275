package control

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/store"
)

// api is the control half of service.Store (plus KeyByID of its
// BrowseStore): what *store.Store and *Control both implement.
type api interface {
	EnsureProject(ctx context.Context, ref memory.ProjectRef) (bool, error)
	Project(ctx context.Context, ref memory.ProjectRef) (memory.ProjectInfo, error)
	ListProjects(ctx context.Context) ([]memory.ProjectInfo, error)
	SetWriteBudget(ctx context.Context, ref memory.ProjectRef, perHour int) error
	SetWriteBudgetBytes(ctx context.Context, ref memory.ProjectRef, perHour int) error
	CreateKey(ctx context.Context, ref memory.ProjectRef, agent string, role memory.Role) (string, memory.Key, error)
	CreateServerAdminKey(ctx context.Context, agent string) (string, memory.Key, error)
	KeyByToken(ctx context.Context, token string) (memory.Key, error)
	ListKeys(ctx context.Context) ([]memory.Key, error)
	ListProjectKeys(ctx context.Context, ref memory.ProjectRef) ([]memory.Key, error)
	KeyCounts(ctx context.Context, ref memory.ProjectRef, since time.Time) (memory.KeyCounts, error)
	RevokeKey(ctx context.Context, id int64) error
	RevokeProjectKey(ctx context.Context, ref memory.ProjectRef, id int64) error
	KeyByID(ctx context.Context, id int64) (memory.Key, error)
}

var (
	_ api = (*store.Store)(nil)
	_ api = (*Control)(nil)
)

// state carries what one backend's run created: tokens and key ids by name,
// so outputs name keys instead of showing their random ids.
type state struct {
	tokens map[string]string
	ids    map[string]int64
	settle func() // waits for this backend's asynchronous last_used_at writes
}

var tokenRe = regexp.MustCompile(`^munin_[A-Za-z0-9_-]{43}$`)

func (st *state) name(id int64) string {
	for n, v := range st.ids {
		if v == id {
			return "#" + n
		}
	}
	return "#unknown-" + strconv.FormatInt(id, 10)
}

// res renders an error (ok for nil) with key ids replaced by their names.
func (st *state) res(err error) string {
	if err == nil {
		return "ok"
	}
	msg := memory.PublicMessage(err)
	for n, id := range st.ids {
		msg = strings.ReplaceAll(msg, "key "+strconv.FormatInt(id, 10)+" ", "key #"+n+" ")
	}
	return msg
}

func set(b bool) string {
	if b {
		return "set"
	}
	return "none"
}

func (st *state) key(k memory.Key, err error) string {
	if err != nil {
		return st.res(err)
	}
	return st.name(k.ID) + " " + k.Agent + " " + string(k.Role) + " " + k.ProjectLabel() +
		" created=" + set(!k.CreatedAt.IsZero()) + " used=" + set(k.LastUsedAt != nil) + " revoked=" + strconv.FormatBool(k.Revoked)
}

func (st *state) keys(ks []memory.Key, err error) string {
	if err != nil {
		return st.res(err)
	}
	if ks == nil {
		return "nil"
	}
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = st.key(k, nil)
	}
	return "[" + strings.Join(out, "; ") + "]"
}

func project(p memory.ProjectInfo, err error) string {
	if err != nil {
		return memory.PublicMessage(err)
	}
	return p.Ref.String() + " " + strconv.Itoa(p.WriteBudget) + " " + strconv.Itoa(p.WriteBudgetBytes) + " created=" + set(!p.CreatedAt.IsZero())
}

// created records a new key under name and renders it (token format and id
// range checked): st.created("x")(b.CreateKey(…)).
func (st *state) created(name string) func(string, memory.Key, error) string {
	return func(tok string, k memory.Key, err error) string {
		if err != nil {
			return st.res(err)
		}
		st.tokens[name], st.ids[name] = tok, k.ID
		if !tokenRe.MatchString(tok) || k.ID < 1 || k.ID > memory.KeyIDMax {
			return "bad token or id"
		}
		return st.key(k, nil)
	}
}

func ref(ws, p string) memory.ProjectRef { return memory.ProjectRef{Workspace: ws, Project: p} }

var (
	alpha = ref("team", "alpha")
	beta  = ref("team", "beta")
	nope  = ref("team", "nope")
	bad   = ref("../x", "alpha")
)

// contract is one run through every method; each step's output must be the
// same for the store and for Control, and equal want.
var contract = []struct {
	name, want string
	run        func(ctx context.Context, b api, st *state) string
}{
	{"ensure new", "true ok", func(ctx context.Context, b api, st *state) string {
		c, err := b.EnsureProject(ctx, alpha)
		return strconv.FormatBool(c) + " " + st.res(err)
	}},
	{"ensure again", "false ok", func(ctx context.Context, b api, st *state) string {
		c, err := b.EnsureProject(ctx, alpha)
		return strconv.FormatBool(c) + " " + st.res(err)
	}},
	{"ensure bad names", `invalid: workspace name "../x" must match ^[a-z0-9][a-z0-9-]{0,62}$ | invalid: project name "Alpha" must match ^[a-z0-9][a-z0-9-]{0,62}$`,
		func(ctx context.Context, b api, st *state) string {
			_, e1 := b.EnsureProject(ctx, bad)
			_, e2 := b.EnsureProject(ctx, ref("team", "Alpha"))
			return st.res(e1) + " | " + st.res(e2)
		}},
	{"ensure more", "true true", func(ctx context.Context, b api, st *state) string {
		c1, _ := b.EnsureProject(ctx, beta)
		c2, _ := b.EnsureProject(ctx, ref("aaa", "zeta"))
		return strconv.FormatBool(c1) + " " + strconv.FormatBool(c2)
	}},
	{"list projects", "aaa/zeta 0 0 created=set, team/alpha 0 0 created=set, team/beta 0 0 created=set", func(ctx context.Context, b api, st *state) string {
		ps, err := b.ListProjects(ctx)
		if err != nil {
			return st.res(err)
		}
		var out []string
		for _, p := range ps {
			out = append(out, project(p, nil))
		}
		return strings.Join(out, ", ")
	}},
	{"project", `team/alpha 0 0 created=set | not_found: project team/nope not found | not_found: project nope/alpha not found | invalid: workspace name "../x" must match ^[a-z0-9][a-z0-9-]{0,62}$`,
		func(ctx context.Context, b api, st *state) string {
			return project(b.Project(ctx, alpha)) + " | " + project(b.Project(ctx, nope)) + " | " +
				project(b.Project(ctx, ref("nope", "alpha"))) + " | " + project(b.Project(ctx, bad))
		}},
	{"write budget", `ok | team/alpha 250 0 created=set | invalid: write budget -1 must not be negative | not_found: project team/nope not found | invalid: workspace name "../x" must match ^[a-z0-9][a-z0-9-]{0,62}$`,
		func(ctx context.Context, b api, st *state) string {
			r := st.res(b.SetWriteBudget(ctx, alpha, 250))
			return r + " | " + project(b.Project(ctx, alpha)) + " | " + st.res(b.SetWriteBudget(ctx, alpha, -1)) + " | " +
				st.res(b.SetWriteBudget(ctx, nope, 5)) + " | " + st.res(b.SetWriteBudget(ctx, bad, -1))
		}},
	{"write budget bytes", `ok | ok | team/alpha 0 4096 created=set | invalid: write budget of -1 bytes must not be negative | not_found: project team/nope not found`,
		func(ctx context.Context, b api, st *state) string {
			r1, r2 := st.res(b.SetWriteBudgetBytes(ctx, alpha, 4096)), st.res(b.SetWriteBudget(ctx, alpha, 0))
			return r1 + " | " + r2 + " | " + project(b.Project(ctx, alpha)) + " | " +
				st.res(b.SetWriteBudgetBytes(ctx, alpha, -1)) + " | " + st.res(b.SetWriteBudgetBytes(ctx, nope, 5))
		}},
	{"create key", "#claude claude write team/alpha created=set used=none revoked=false", func(ctx context.Context, b api, st *state) string {
		return st.created("claude")(b.CreateKey(ctx, alpha, "claude", memory.RoleWrite))
	}},
	{"create key rejects", strings.Join([]string{
		"not_found: project team/nope not found",
		"not_found: project nope/alpha not found",
		"invalid: agent name must be 1-128 bytes, got 0",
		"invalid: agent name must be 1-128 bytes, got 129",
		`invalid: agent name "a\nb" contains a control or non-printable character`,
		"invalid: agent name is not valid UTF-8",
		`invalid: role "root" must be read, propose, write or admin`,
		`invalid: role "server-admin" is not a project role: only the command line creates a server-admin key (munin key create --server-admin --agent NAME)`,
		`invalid: workspace name "../x" must match ^[a-z0-9][a-z0-9-]{0,62}$`,
		`invalid: agent name "bad\nname" contains a control or non-printable character`,
		"[#claude claude write team/alpha created=set used=none revoked=false]",
	}, " | "), func(ctx context.Context, b api, st *state) string {
		var out []string
		for _, c := range []struct {
			ref   memory.ProjectRef
			agent string
			role  memory.Role
		}{
			{nope, "a", memory.RoleRead}, {ref("nope", "alpha"), "a", memory.RoleRead},
			{alpha, "", memory.RoleRead}, {alpha, strings.Repeat("a", memory.MaxAgent+1), memory.RoleRead},
			{alpha, "a\nb", memory.RoleRead}, {alpha, "a\xffb", memory.RoleRead},
			{alpha, "a", memory.Role("root")}, {alpha, "a", memory.RoleServerAdmin}, {bad, "a", memory.RoleRead},
		} {
			_, _, err := b.CreateKey(ctx, c.ref, c.agent, c.role)
			out = append(out, st.res(err))
		}
		_, _, err := b.CreateServerAdminKey(ctx, "bad\nname")
		out = append(out, st.res(err))
		return strings.Join(append(out, st.keys(b.ListKeys(ctx))), " | ")
	}},
	{"more keys", "#reader reader read team/alpha created=set used=none revoked=false | #bob bob admin team/beta created=set used=none revoked=false | #ops ops server-admin server created=set used=none revoked=false",
		func(ctx context.Context, b api, st *state) string {
			r := st.created("reader")(b.CreateKey(ctx, alpha, "reader", memory.RoleRead))
			r += " | " + st.created("bob")(b.CreateKey(ctx, beta, "bob", memory.RoleAdmin))
			return r + " | " + st.created("ops")(b.CreateServerAdminKey(ctx, "ops"))
		}},
	{"key by token", "#claude claude write team/alpha created=set used=set revoked=false | #ops ops server-admin server created=set used=set revoked=false | unauthorized: unknown or revoked key | unauthorized: unknown or revoked key | unauthorized: unknown or revoked key",
		func(ctx context.Context, b api, st *state) string {
			out := []string{st.key(b.KeyByToken(ctx, st.tokens["claude"])), st.key(b.KeyByToken(ctx, st.tokens["ops"]))}
			for _, tok := range []string{"", "munin_nope", st.tokens["claude"] + "x"} {
				_, err := b.KeyByToken(ctx, tok)
				out = append(out, st.res(err))
			}
			return strings.Join(out, " | ")
		}},
	{"key by id", "#bob bob admin team/beta created=set used=none revoked=false | not_found: key 0 not found | not_found: key 2147483648 not found | not_found: key 5 not found",
		func(ctx context.Context, b api, st *state) string {
			return st.key(b.KeyByID(ctx, st.ids["bob"])) + " | " + st.key(b.KeyByID(ctx, 0)) + " | " +
				st.key(b.KeyByID(ctx, memory.KeyIDMax+1)) + " | " + st.key(b.KeyByID(ctx, 5))
		}},
	{"list keys", "[#claude claude write team/alpha created=set used=set revoked=false; #reader reader read team/alpha created=set used=none revoked=false; #bob bob admin team/beta created=set used=none revoked=false; #ops ops server-admin server created=set used=set revoked=false]",
		func(ctx context.Context, b api, st *state) string {
			st.settle()
			return st.keys(b.ListKeys(ctx))
		}},
	{"list project keys", "[#claude claude write team/alpha created=set used=set revoked=false; #reader reader read team/alpha created=set used=none revoked=false] | [] | [] | []",
		func(ctx context.Context, b api, st *state) string {
			return st.keys(b.ListProjectKeys(ctx, alpha)) + " | " + st.keys(b.ListProjectKeys(ctx, nope)) + " | " +
				st.keys(b.ListProjectKeys(ctx, bad)) + " | " + st.keys(b.ListProjectKeys(ctx, memory.ProjectRef{}))
		}},
	{"key counts", "2 set 2 | 0 none 2 | 0 none 0 | 0 none 0", func(ctx context.Context, b api, st *state) string {
		return counts(b.KeyCounts(ctx, alpha, time.Time{})) + " | " + counts(b.KeyCounts(ctx, alpha, time.Now().Add(time.Hour))) + " | " +
			counts(b.KeyCounts(ctx, nope, time.Time{})) + " | " + counts(b.KeyCounts(ctx, memory.ProjectRef{}, time.Time{}))
	}},
	{"revoke project key", "not_found: key #claude not found | not_found: key #ops not found | not_found: key #ops not found | ok | ok | unauthorized: unknown or revoked key | #claude claude write team/alpha created=set used=set revoked=true | #reader reader read team/alpha created=set used=set revoked=false",
		func(ctx context.Context, b api, st *state) string {
			out := []string{st.res(b.RevokeProjectKey(ctx, beta, st.ids["claude"])), st.res(b.RevokeProjectKey(ctx, alpha, st.ids["ops"])),
				st.res(b.RevokeProjectKey(ctx, memory.ProjectRef{}, st.ids["ops"])),
				st.res(b.RevokeProjectKey(ctx, alpha, st.ids["claude"])), st.res(b.RevokeProjectKey(ctx, alpha, st.ids["claude"]))}
			_, err := b.KeyByToken(ctx, st.tokens["claude"])
			out = append(out, st.res(err), st.key(b.KeyByID(ctx, st.ids["claude"])), st.key(b.KeyByToken(ctx, st.tokens["reader"])))
			return strings.Join(out, " | ")
		}},
	{"revoke key", "not_found: key 0 not found | not_found: key -3 not found | ok | ok | unauthorized: unknown or revoked key | 2 set 1",
		func(ctx context.Context, b api, st *state) string {
			out := []string{st.res(b.RevokeKey(ctx, 0)), st.res(b.RevokeKey(ctx, -3)), st.res(b.RevokeKey(ctx, st.ids["ops"])), st.res(b.RevokeKey(ctx, st.ids["ops"]))}
			_, err := b.KeyByToken(ctx, st.tokens["ops"])
			return strings.Join(append(out, st.res(err), counts(b.KeyCounts(ctx, alpha, time.Time{}))), " | ")
		}},
	{"list keys revoked", "[#claude claude write team/alpha created=set used=set revoked=true; #reader reader read team/alpha created=set used=set revoked=false; #bob bob admin team/beta created=set used=none revoked=false; #ops ops server-admin server created=set used=set revoked=true]",
		func(ctx context.Context, b api, st *state) string {
			st.settle()
			return st.keys(b.ListKeys(ctx))
		}},
}

func counts(c memory.KeyCounts, err error) string {
	if err != nil {
		return memory.PublicMessage(err)
	}
	return strconv.Itoa(c.CreatedSince) + " " + set(!c.OldestSince.IsZero()) + " " + strconv.Itoa(c.Live)
}

// TestContract runs the contract against *store.Store and *Control: the same
// calls give the same results and the same errors.
func TestContract(t *testing.T) {
	backends := map[string]func(t *testing.T) (api, func()){
		"store": func(t *testing.T) (api, func()) {
			s, err := store.Open(t.TempDir(), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s, func() {}
		},
		"etcd": func(t *testing.T) (api, func()) {
			c := openControl(t, startEtcd(t), Options{})
			return c, func() {
				if err := c.flushLastUsed(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
		},
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			b, settle := open(t)
			st := &state{tokens: map[string]string{}, ids: map[string]int64{}, settle: settle}
			ctx := context.Background()
			for _, step := range contract {
				if got := step.run(ctx, b, st); got != step.want {
					t.Errorf("%s:\n got %s\nwant %s", step.name, got, step.want)
				}
			}
		})
	}
}
