package service_test

import (
	"testing"

	"munin/internal/service"
)

// TestOAuthCallerNamesClient: the caller a token authenticates as names
// the grant's client, and a write through it records that client in the
// change feed; the person's keys alone name none.
func TestOAuthCallerNamesClient(t *testing.T) {
	e := newOAuthEnv(t)
	tok := e.signIn(t)
	c, err := e.env.Svc.AuthenticateOAuth(ctx, tok.Access, mcpResource)
	if err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	if c.Client() != "Claude" || e.person.Client() != "" {
		t.Fatalf("token caller's client %q, key caller's %q; want Claude and none", c.Client(), e.person.Client())
	}
	if _, err := e.env.Svc.Remember(ctx, c, service.RememberRequest{Slug: "notes/by-token", Content: "x"}); err != nil {
		t.Fatal(err)
	}
	res, err := e.env.Svc.Changes(ctx, e.person, service.ChangesRequest{})
	if err != nil || len(res.Changes) != 1 || res.Changes[0].Client != "Claude" || res.Changes[0].Agent != "alice" {
		t.Fatalf("changes %+v, %v; want one by alice through Claude", res.Changes, err)
	}
}
