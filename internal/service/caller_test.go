package service_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// authEnv is a server with keys for acme/a (write), acme/b (read) and
// other/c (admin), a revoked key of acme/a, and a server-admin key; logged
// holds everything the service logged.
type authEnv struct {
	env              *servicetest.Env
	logged           *bytes.Buffer
	a, b, c, revoked string
	server           string
	refA, refB, refC memory.ProjectRef
	aKey, bKey       memory.Key
}

func newAuthEnv(t *testing.T) *authEnv {
	t.Helper()
	e := &authEnv{logged: &bytes.Buffer{}}
	e.env = servicetest.New(t, service.Options{Logger: slog.New(slog.NewTextHandler(e.logged, nil))})
	var ca, cb memory.Caller
	e.a, ca = e.env.Key(t, "acme", "a", "ann", memory.RoleWrite)
	e.b, cb = e.env.Key(t, "acme", "b", "bob", memory.RoleRead)
	e.c, _ = e.env.Key(t, "other", "c", "cat", memory.RoleAdmin)
	e.aKey, e.bKey = ca.First(), cb.First()
	e.refA, e.refB, e.refC = e.aKey.Project, e.bKey.Project, memory.ProjectRef{Workspace: "other", Project: "c"}
	var revoked memory.Caller
	e.revoked, revoked = e.env.Key(t, "acme", "a", "gone", memory.RoleWrite)
	if err := e.env.Svc.RevokeKey(ctx, revoked.First().ID); err != nil {
		t.Fatal(err)
	}
	e.server, _ = e.env.ServerAdmin(t, "ops")
	return e
}

// TestAuthenticateKeyList: a comma-separated list is one caller holding a
// key for each project, in the order sent; spaces around commas do not
// matter and a repeated key counts once.
func TestAuthenticateKeyList(t *testing.T) {
	e := newAuthEnv(t)
	ab := []memory.ProjectRef{e.refA, e.refB}
	for _, tc := range []struct {
		header string
		want   []memory.ProjectRef
	}{
		{e.a, []memory.ProjectRef{e.refA}},
		{e.a + "," + e.b, ab},
		{e.b + "," + e.a, []memory.ProjectRef{e.refB, e.refA}},
		{" " + e.a + " ,\t" + e.b + " ", ab},
		{e.a + "," + e.b + "," + e.a, ab},
		{e.a + ", " + e.a + " ," + e.b + "," + e.b, ab},
		{e.a + "," + e.b + "," + e.c, []memory.ProjectRef{e.refA, e.refB, e.refC}},
	} {
		c, err := e.env.Svc.Authenticate(ctx, tc.header)
		if err != nil || !slices.Equal(c.Projects(), tc.want) {
			t.Errorf("Authenticate(%s) = %v, %v; want projects %v", e.name(tc.header), c.Projects(), err, tc.want)
			continue
		}
		if len(c.Keys()) != len(tc.want) {
			t.Errorf("Authenticate(%s) holds %d keys, want %d", e.name(tc.header), len(c.Keys()), len(tc.want))
		}
	}
	c := e.env.Caller(t, e.a, e.b)
	if k, ok := c.KeyFor(e.refB); !ok || k.ID != e.bKey.ID || k.Role != memory.RoleRead || k.Agent != "bob" {
		t.Errorf("key for acme/b = %+v, %v; want bob's read key", k, ok)
	}
	if c.First().ID != e.aKey.ID {
		t.Errorf("first key %d, want ann's %d", c.First().ID, e.aKey.ID)
	}
	if c, err := e.env.Svc.Authenticate(ctx, e.server); err != nil || !c.ServerAdmin() {
		t.Errorf("a server-admin key alone: %+v, %v", c, err)
	}
	if c, err := e.env.Svc.Authenticate(ctx, e.server+","+e.server); err != nil || !c.ServerAdmin() {
		t.Errorf("a server-admin key repeated: %+v, %v; it counts once, so it is alone", c, err)
	}
	if c, err := e.env.Svc.AuthenticateMemory(ctx, e.a+","+e.b); err != nil || len(c.Projects()) != 2 {
		t.Errorf("AuthenticateMemory of two keys: %v, %v", c.Projects(), err)
	}
	if _, err := e.env.Svc.AuthenticateMemory(ctx, e.server); memory.ErrorCode(err) != memory.CodeForbidden {
		t.Errorf("AuthenticateMemory of a server-admin key: %v, want forbidden", err)
	}
}

// TestAuthenticateSixteenKeys: 16 keys fit in a list, 17 do not.
func TestAuthenticateSixteenKeys(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	var tokens []string
	for i := range memory.MaxCallerKeys + 1 {
		token, _ := env.Key(t, "many", fmt.Sprintf("p%d", i), "agent", memory.RoleRead)
		tokens = append(tokens, token)
	}
	if c := env.Caller(t, tokens[:memory.MaxCallerKeys]...); len(c.Projects()) != memory.MaxCallerKeys {
		t.Errorf("16 keys reach %d projects", len(c.Projects()))
	}
	_, err := env.Svc.Authenticate(ctx, strings.Join(tokens, ","))
	if err == nil || err.Error() != "unauthorized: 17 keys sent; at most 16 keys fit in one Authorization header" {
		t.Errorf("17 keys: %v", err)
	}
}

// TestAuthenticateRefusals: one bad entry refuses the whole list with a
// clear unauthorized that names its position, never a project or a token;
// the service logs nothing of it.
func TestAuthenticateRefusals(t *testing.T) {
	e := newAuthEnv(t)
	long := memory.KeyPrefix + strings.Repeat("x", 300)
	for _, tc := range []struct{ header, want string }{
		{"", "unauthorized: missing key: send Authorization: Bearer munin_…"},
		{"   ", "unauthorized: missing key: send Authorization: Bearer munin_…"},
		{e.revoked, "unauthorized: unknown or revoked key"},
		{"not-a-munin-key", "unauthorized: unknown or revoked key"},
		{",", "unauthorized: key 1 of 2 is empty"},
		{" , ", "unauthorized: key 1 of 2 is empty"},
		{e.a + ",", "unauthorized: key 2 of 2 is empty"},
		{e.a + ",," + e.b, "unauthorized: key 2 of 3 is empty"},
		{e.a + ",not-a-munin-key," + e.b, "unauthorized: key 2 of 3 is unknown or revoked"},
		{e.a + ",Bearer " + e.b + "," + e.c, "unauthorized: key 2 of 3 is unknown or revoked"},
		{e.a + "," + e.b + " " + e.c, "unauthorized: key 2 of 2 is unknown or revoked"},
		{e.a + "," + e.b + "," + e.revoked, "unauthorized: key 3 of 3 is unknown or revoked"},
		{e.a + "," + e.revoked + "," + e.a, "unauthorized: key 2 of 3 is unknown or revoked"},
		{e.a + "," + e.b[:len(e.b)-1], "unauthorized: key 2 of 2 is unknown or revoked"},
		{e.a + "," + long, "unauthorized: key 2 of 2 is unknown or revoked"},
		{e.a + "," + e.server, "unauthorized: key 2 of 2 is a server-admin key, which is used alone"},
		{e.server + "," + e.a, "unauthorized: key 1 of 2 is a server-admin key, which is used alone"},
		{e.a + "," + e.a + "," + e.server, "unauthorized: key 3 of 3 is a server-admin key, which is used alone"},
		{e.a + "," + e.b + "," + e.a + "," + e.server, "unauthorized: key 4 of 4 is a server-admin key, which is used alone"},
	} {
		_, err := e.env.Svc.Authenticate(ctx, tc.header)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Authenticate(%s) = %v, want %q", e.name(tc.header), err, tc.want)
		}
		e.noSecrets(t, tc.header, err)
	}
	for _, n := range []int{4300, 10 << 10} {
		header := strings.Repeat(e.a+",", n/(len(e.a)+1)+1)[:n]
		_, err := e.env.Svc.Authenticate(ctx, header)
		if memory.ErrorCode(err) != memory.CodeUnauthorized || !strings.HasPrefix(err.Error(), fmt.Sprintf("unauthorized: the key list is %d bytes; at most 16 keys", n)) {
			t.Errorf("a key list of %d bytes: %v", n, err)
		}
		e.noSecrets(t, header, err)
	}
	if e.logged.Len() > 0 {
		t.Errorf("refused key lists were logged:\n%s", e.logged.String())
	}
}

// noSecrets checks that err names no token of the header (nor any part of
// one) and no project.
func (e *authEnv) noSecrets(t *testing.T, header string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	msg := err.Error()
	for _, part := range append(strings.FieldsFunc(header, func(r rune) bool { return r == ',' || r == ' ' }), e.a, e.b, e.c, e.revoked, e.server) {
		if secret := strings.TrimPrefix(part, memory.KeyPrefix); len(secret) >= 6 && strings.Contains(msg, secret[:6]) {
			t.Errorf("Authenticate(%s): %q contains a part of a token", e.name(header), msg)
		}
	}
	for _, p := range []string{"acme", "other", e.refA.Project + "/", "ann", "bob", "cat", "ops"} {
		if strings.Contains(msg, p) {
			t.Errorf("Authenticate(%s): %q names %q", e.name(header), msg, p)
		}
	}
}

// name makes a header readable in a failure message: tokens by their key's name.
func (e *authEnv) name(header string) string {
	r := strings.NewReplacer(e.a, "<a>", e.b, "<b>", e.c, "<c>", e.revoked, "<revoked>", e.server, "<server>")
	if len(header) > 400 {
		return fmt.Sprintf("%d bytes", len(header))
	}
	return "[" + r.Replace(header) + "]"
}

// TestRevokingOneOfTwoKeys: the next authentication of the pair fails at
// once, naming the revoked key's position; the other key still works alone.
func TestRevokingOneOfTwoKeys(t *testing.T) {
	for _, by := range []string{"operator", "project admin"} {
		t.Run(by, func(t *testing.T) {
			env := servicetest.New(t, service.Options{})
			a, _ := env.Key(t, "acme", "a", "ann", memory.RoleWrite)
			b, cb := env.Key(t, "acme", "b", "bob", memory.RoleWrite)
			adminB, _ := env.Key(t, "acme", "b", "boss", memory.RoleAdmin)
			pair := a + "," + b
			env.Caller(t, a, b) // authenticated (and cached) before the revocation
			var err error
			if by == "operator" {
				err = env.Svc.RevokeKey(ctx, cb.First().ID)
			} else {
				err = env.Svc.RevokeProjectKey(ctx, env.Caller(t, a, adminB), cb.First().ID)
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := env.Svc.Authenticate(ctx, pair); err == nil || err.Error() != "unauthorized: key 2 of 2 is unknown or revoked" {
				t.Fatalf("the pair after revoking its second key: %v", err)
			}
			if _, err := env.Svc.Authenticate(ctx, b+","+a); err == nil || err.Error() != "unauthorized: key 1 of 2 is unknown or revoked" {
				t.Fatalf("the pair the other way round: %v", err)
			}
			if c := env.Caller(t, a); c.First().Agent != "ann" {
				t.Fatalf("the other key alone: %+v", c.First())
			}
		})
	}
}

// TestCallerInContext: a transport puts the authenticated caller in the
// context; a context without one, or with an empty one, is unauthorized.
func TestCallerInContext(t *testing.T) {
	e := newAuthEnv(t)
	c := e.env.Caller(t, e.a, e.b)
	got, err := service.CallerFrom(service.WithCaller(ctx, c))
	if err != nil || got.Owner() != c.Owner() || !slices.Equal(got.Projects(), c.Projects()) {
		t.Errorf("caller from context = %v, %v; want %v", got.Projects(), err, c.Projects())
	}
	for name, cx := range map[string]context.Context{"no caller": ctx, "empty caller": service.WithCaller(ctx, memory.Caller{})} {
		if _, err := service.CallerFrom(cx); memory.ErrorCode(err) != memory.CodeUnauthorized {
			t.Errorf("%s: %v, want unauthorized", name, err)
		}
	}
}
