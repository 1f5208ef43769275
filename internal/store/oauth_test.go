package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"munin/internal/memory"
)

// oauthFixture is a store with project acme/alpha, two live keys, a
// registered client and a live grant of both keys.
type oauthFixture struct {
	s      *Store
	ref    memory.ProjectRef
	keys   []int64 // sorted
	client memory.OAuthClient
	grant  int64
	now    time.Time
}

func newOAuthFixture(t testing.TB) *oauthFixture {
	t.Helper()
	s := openTest(t)
	ctx := context.Background()
	f := &oauthFixture{s: s, ref: ensure(t, s, "acme", "alpha"), now: time.Now()}
	for _, agent := range []string{"alice", "bob"} {
		_, k, err := s.CreateKey(ctx, f.ref, agent, memory.RoleWrite)
		if err != nil {
			t.Fatal(err)
		}
		f.keys = append(f.keys, k.ID)
	}
	slices.Sort(f.keys)
	f.client = memory.OAuthClient{ID: "dcr-client-1", Kind: memory.OAuthClientDCR, Name: "Claude", RedirectURIs: []string{"https://claude.ai/api/mcp/auth_callback"}}
	if err := s.PutOAuthClient(ctx, f.client); err != nil {
		t.Fatal(err)
	}
	f.grant = f.newGrant(t, f.keys...)
	return f
}

// newGrant creates a live grant of keys for the fixture's client.
func (f *oauthFixture) newGrant(t testing.TB, keys ...int64) int64 {
	t.Helper()
	id, err := f.s.CreateOAuthGrant(context.Background(), memory.OAuthGrant{
		ClientID: f.client.ID, Resource: "https://munin.example.com/mcp", Scope: "memory",
		KeyIDs: keys, CreatedAt: f.now, ExpiresAt: f.now.Add(memory.OAuthGrantTTL),
	})
	if err != nil {
		t.Fatalf("CreateOAuthGrant: %v", err)
	}
	return id
}

// issue stores an access and a refresh token of grant and returns their hashes.
func (f *oauthFixture) issue(t testing.TB, grant int64, name string) (access, refresh string) {
	t.Helper()
	access, refresh = memory.HashToken(memory.OAuthAccessPrefix+name), memory.HashToken(memory.OAuthRefreshPrefix+name)
	err := f.s.PutOAuthTokens(context.Background(),
		memory.OAuthToken{Hash: access, GrantID: grant, Kind: memory.OAuthAccess, ExpiresAt: f.now.Add(memory.OAuthAccessTTL)},
		memory.OAuthToken{Hash: refresh, GrantID: grant, Kind: memory.OAuthRefresh, ExpiresAt: f.now.Add(memory.OAuthRefreshTTL)})
	if err != nil {
		t.Fatalf("PutOAuthTokens: %v", err)
	}
	return access, refresh
}

// code stores an authorization code of grant and returns its hash.
func (f *oauthFixture) code(t testing.TB, grant int64, name string) string {
	t.Helper()
	h := memory.HashToken(memory.OAuthCodePrefix + name)
	if err := f.s.PutOAuthCode(context.Background(), memory.OAuthCode{Hash: h, GrantID: grant, RedirectURI: "https://claude.ai/cb",
		Challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", ExpiresAt: f.now.Add(memory.OAuthCodeTTL)}); err != nil {
		t.Fatalf("PutOAuthCode: %v", err)
	}
	return h
}

// pair is a new access and refresh token for a rotation.
func (f *oauthFixture) pair(name string) (memory.OAuthToken, memory.OAuthToken) {
	return memory.OAuthToken{Hash: memory.HashToken(memory.OAuthAccessPrefix + name), Kind: memory.OAuthAccess, ExpiresAt: f.now.Add(memory.OAuthAccessTTL)},
		memory.OAuthToken{Hash: memory.HashToken(memory.OAuthRefreshPrefix + name), Kind: memory.OAuthRefresh, ExpiresAt: f.now.Add(memory.OAuthRefreshTTL)}
}

// count counts rows of a control table.
func (f *oauthFixture) count(t testing.TB, table string) int {
	t.Helper()
	var n int
	if err := rawDB(t, f.s.control.path).QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// grantRevoked tells whether the grant's row is revoked.
func (f *oauthFixture) grantRevoked(t testing.TB, id int64) bool {
	t.Helper()
	var revoked bool
	if err := rawDB(t, f.s.control.path).QueryRow("SELECT revoked_at IS NOT NULL FROM oauth_grants WHERE id = ?", id).Scan(&revoked); err != nil {
		t.Fatal(err)
	}
	return revoked
}

// wantErr fails unless err is target.
func wantErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("err = %v, want %v", err, target)
	}
}

func TestOAuthClients(t *testing.T) {
	f := newOAuthFixture(t)
	s, ctx := f.s, context.Background()
	got, err := s.OAuthClient(ctx, f.client.ID)
	if err != nil || got.Name != "Claude" || got.Kind != memory.OAuthClientDCR || !slices.Equal(got.RedirectURIs, f.client.RedirectURIs) || got.SecretHash != "" || got.CreatedAt.IsZero() {
		t.Fatalf("OAuthClient = %+v, %v", got, err)
	}
	// A dcr id is never replaced.
	wantCode(t, s.PutOAuthClient(ctx, memory.OAuthClient{ID: f.client.ID, Kind: memory.OAuthClientDCR, Name: "Evil"}), memory.CodeConflict)
	if got, _ := s.OAuthClient(ctx, f.client.ID); got.Name != "Claude" {
		t.Fatalf("a conflicting put changed the client: %+v", got)
	}
	// A cimd client fetched again is replaced; it keeps its creation time.
	cimd := memory.OAuthClient{ID: "https://app.example.com/client.json", Kind: memory.OAuthClientCIMD, Name: "App", RedirectURIs: []string{"https://app.example.com/cb"}}
	if err := s.PutOAuthClient(ctx, cimd); err != nil {
		t.Fatal(err)
	}
	first, _ := s.OAuthClient(ctx, cimd.ID)
	cimd.Name, cimd.RedirectURIs, cimd.CreatedAt = "App 2", []string{"https://app.example.com/cb2", "http://127.0.0.1/cb"}, first.CreatedAt.Add(time.Hour)
	if err := s.PutOAuthClient(ctx, cimd); err != nil {
		t.Fatalf("replacing a cimd client: %v", err)
	}
	got, err = s.OAuthClient(ctx, cimd.ID)
	if err != nil || got.Name != "App 2" || !slices.Equal(got.RedirectURIs, cimd.RedirectURIs) || !got.CreatedAt.Equal(first.CreatedAt) {
		t.Fatalf("replaced cimd client = %+v, %v (created first %v)", got, err, first.CreatedAt)
	}
	// Another kind under a taken id is a conflict.
	wantCode(t, s.PutOAuthClient(ctx, memory.OAuthClient{ID: cimd.ID, Kind: memory.OAuthClientStatic, Name: "X"}), memory.CodeConflict)
	static := memory.OAuthClient{ID: "ops-tool", Kind: memory.OAuthClientStatic, Name: "Ops", SecretHash: memory.HashToken("secret"), RedirectURIs: []string{"https://ops/cb"}}
	if err := s.PutOAuthClient(ctx, static); err != nil {
		t.Fatal(err)
	}
	if got, err := s.OAuthClient(ctx, static.ID); err != nil || got.SecretHash != static.SecretHash {
		t.Fatalf("static client = %+v, %v", got, err)
	}

	_, err = s.OAuthClient(ctx, "nope")
	wantCode(t, err, memory.CodeNotFound)
	wantCode(t, s.PutOAuthClient(ctx, memory.OAuthClient{ID: "", Kind: memory.OAuthClientDCR}), memory.CodeInvalid)
	wantCode(t, s.PutOAuthClient(ctx, memory.OAuthClient{ID: "x", Kind: "public"}), memory.CodeInvalid)
	if n := f.count(t, "oauth_clients"); n != 3 {
		t.Fatalf("%d clients, want 3", n)
	}
}

func TestOAuthGrantRefusals(t *testing.T) {
	f := newOAuthFixture(t)
	s, ctx := f.s, context.Background()
	_, revoked, err := s.CreateKey(ctx, f.ref, "gone", memory.RoleRead)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeKey(ctx, revoked.ID); err != nil {
		t.Fatal(err)
	}
	ok := memory.OAuthGrant{ClientID: f.client.ID, Resource: "r", KeyIDs: f.keys, ExpiresAt: f.now.Add(time.Hour)}
	with := func(change func(*memory.OAuthGrant)) memory.OAuthGrant {
		g := ok
		g.KeyIDs = slices.Clone(ok.KeyIDs)
		change(&g)
		return g
	}
	cases := []struct {
		name string
		g    memory.OAuthGrant
		code memory.Code
	}{
		{"revoked key", with(func(g *memory.OAuthGrant) { g.KeyIDs = append(g.KeyIDs, revoked.ID) }), memory.CodeUnauthorized},
		{"unknown key", with(func(g *memory.OAuthGrant) { g.KeyIDs = append(g.KeyIDs, 0) }), memory.CodeUnauthorized},
		{"unknown client", with(func(g *memory.OAuthGrant) { g.ClientID = "nope" }), memory.CodeNotFound},
		{"no client", with(func(g *memory.OAuthGrant) { g.ClientID = "" }), memory.CodeInvalid},
		{"no keys", with(func(g *memory.OAuthGrant) { g.KeyIDs = nil }), memory.CodeInvalid},
		{"a key twice", with(func(g *memory.OAuthGrant) { g.KeyIDs = append(g.KeyIDs, g.KeyIDs[0]) }), memory.CodeInvalid},
		{"no expiry", with(func(g *memory.OAuthGrant) { g.ExpiresAt = time.Time{} }), memory.CodeInvalid},
	}
	grants, grantKeys := f.count(t, "oauth_grants"), f.count(t, "oauth_grant_keys")
	for _, c := range cases {
		id, err := s.CreateOAuthGrant(ctx, c.g)
		if memory.ErrorCode(err) != c.code || id != 0 {
			t.Errorf("%s: id %d, err %v, want %q", c.name, id, err, c.code)
		}
	}
	if g, k := f.count(t, "oauth_grants"), f.count(t, "oauth_grant_keys"); g != grants || k != grantKeys {
		t.Fatalf("refused grants wrote rows: grants %d→%d, grant keys %d→%d", grants, g, grantKeys, k)
	}
	if _, err := s.CreateOAuthGrant(ctx, ok); err != nil {
		t.Fatalf("the valid grant: %v", err)
	}
}

// A drawn grant id that is taken is drawn again in the same transaction; a
// grant whose every draw is taken writes nothing.
func TestOAuthGrantIDCollision(t *testing.T) {
	f := newOAuthFixture(t)
	ctx := context.Background()
	g := memory.OAuthGrant{ClientID: f.client.ID, Resource: "r", KeyIDs: f.keys[:1], ExpiresAt: f.now.Add(time.Hour)}
	draws := 0
	id, err := f.s.createOAuthGrant(ctx, g, func() (int64, error) {
		draws++
		if draws == 1 {
			return f.grant, nil
		}
		return memory.NewKeyID()
	})
	if err != nil || id == f.grant || draws != 2 {
		t.Fatalf("after a collision: id %d (taken %d), %d draws, %v", id, f.grant, draws, err)
	}
	before := f.count(t, "oauth_grant_keys")
	_, err = f.s.createOAuthGrant(ctx, g, func() (int64, error) { return f.grant, nil })
	if err == nil || f.count(t, "oauth_grant_keys") != before || f.count(t, "oauth_grants") != 2 {
		t.Fatalf("all draws taken: err %v, rows written", err)
	}
}

func TestOAuthCodeExchange(t *testing.T) {
	f := newOAuthFixture(t)
	s, ctx := f.s, context.Background()
	h := f.code(t, f.grant, "one")
	c, g, err := s.ConsumeOAuthCode(ctx, h, f.now)
	if err != nil {
		t.Fatal(err)
	}
	if c.GrantID != f.grant || c.RedirectURI != "https://claude.ai/cb" || c.Challenge == "" || c.ExpiresAt.IsZero() {
		t.Fatalf("code = %+v", c)
	}
	if g.ID != f.grant || g.ClientID != f.client.ID || g.ClientName != "Claude" || g.Resource != "https://munin.example.com/mcp" ||
		g.Scope != "memory" || !slices.Equal(g.KeyIDs, f.keys) || g.Revoked || !g.ExpiresAt.After(f.now) {
		t.Fatalf("grant = %+v, keys want %v", g, f.keys)
	}
	access, refresh := f.issue(t, f.grant, "one")
	if _, err := s.OAuthAccess(ctx, access, f.now); err != nil {
		t.Fatalf("access before the reuse: %v", err)
	}

	// The second exchange is reuse: refused, and the grant ends with every
	// token of it (OAuth 2.1 §4.1.3).
	_, _, err = s.ConsumeOAuthCode(ctx, h, f.now)
	wantErr(t, err, ErrOAuthCodeReused)
	wantCode(t, err, memory.CodeInvalid)
	if !f.grantRevoked(t, f.grant) {
		t.Fatal("code reuse left the grant live")
	}
	_, err = s.OAuthAccess(ctx, access, f.now)
	wantErr(t, err, ErrOAuthTokenInvalid)
	a, r := f.pair("two")
	_, err = s.RotateOAuthRefresh(ctx, refresh, a, r, f.now)
	wantErr(t, err, ErrOAuthRefreshInvalid)
}

// A reused code or refresh token reads like an unknown one: the answer
// says nothing of what existed. Only errors.Is tells them apart.
func TestOAuthReuseReadsLikeUnknown(t *testing.T) {
	for _, pair := range [][2]error{{ErrOAuthCodeReused, ErrOAuthCodeInvalid}, {ErrOAuthRefreshReused, ErrOAuthRefreshInvalid}} {
		if memory.PublicMessage(pair[0]) != memory.PublicMessage(pair[1]) || errors.Is(pair[0], pair[1]) {
			t.Errorf("%v and %v: the same words, distinct errors wanted", pair[0], pair[1])
		}
	}
}

func TestOAuthCodeRefusals(t *testing.T) {
	f := newOAuthFixture(t)
	s, ctx := f.s, context.Background()

	_, _, err := s.ConsumeOAuthCode(ctx, memory.HashToken("munin_oac_unknown"), f.now)
	wantErr(t, err, ErrOAuthCodeInvalid)

	// Expired: refused, and not counted as a use (the grant stays live).
	h := f.code(t, f.grant, "late")
	_, _, err = s.ConsumeOAuthCode(ctx, h, f.now.Add(memory.OAuthCodeTTL))
	wantErr(t, err, ErrOAuthCodeInvalid)
	if f.grantRevoked(t, f.grant) {
		t.Fatal("an expired code revoked its grant")
	}

	// A grant past its expiry, or revoked, takes its codes with it.
	short, err := s.CreateOAuthGrant(ctx, memory.OAuthGrant{ClientID: f.client.ID, Resource: "r", KeyIDs: f.keys, CreatedAt: f.now, ExpiresAt: f.now.Add(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	h = f.code(t, short, "short")
	_, _, err = s.ConsumeOAuthCode(ctx, h, f.now.Add(time.Second))
	wantErr(t, err, ErrOAuthCodeInvalid)
	h = f.code(t, f.grant, "revoked")
	if err := s.RevokeOAuthGrant(ctx, f.grant); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.ConsumeOAuthCode(ctx, h, f.now)
	wantErr(t, err, ErrOAuthCodeInvalid)

	// Storing: a revoked or unknown grant, a duplicate, missing fields.
	ok := memory.OAuthCode{Hash: "h1", GrantID: short, RedirectURI: "https://x/cb", Challenge: "c", ExpiresAt: f.now.Add(time.Minute)}
	wantCode(t, s.PutOAuthCode(ctx, memory.OAuthCode{Hash: "h2", GrantID: f.grant, RedirectURI: "u", Challenge: "c", ExpiresAt: ok.ExpiresAt}), memory.CodeNotFound)
	wantCode(t, s.PutOAuthCode(ctx, memory.OAuthCode{Hash: "h3", GrantID: 7, RedirectURI: "u", Challenge: "c", ExpiresAt: ok.ExpiresAt}), memory.CodeNotFound)
	if err := s.PutOAuthCode(ctx, ok); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.PutOAuthCode(ctx, ok), memory.CodeConflict)
	for _, c := range []memory.OAuthCode{{GrantID: short, RedirectURI: "u", Challenge: "c", ExpiresAt: ok.ExpiresAt},
		{Hash: "h4", GrantID: short, Challenge: "c", ExpiresAt: ok.ExpiresAt},
		{Hash: "h5", GrantID: short, RedirectURI: "u", ExpiresAt: ok.ExpiresAt},
		{Hash: "h6", GrantID: short, RedirectURI: "u", Challenge: "c"}} {
		wantCode(t, s.PutOAuthCode(ctx, c), memory.CodeInvalid)
	}
	if n := f.count(t, "oauth_codes"); n != 4 {
		t.Fatalf("%d codes stored, want 4", n)
	}
}

func TestOAuthAccess(t *testing.T) {
	f := newOAuthFixture(t)
	s, ctx := f.s, context.Background()
	access, refresh := f.issue(t, f.grant, "one")
	g, err := s.OAuthAccess(ctx, access, f.now)
	if err != nil || g.ID != f.grant || g.ClientName != "Claude" || !slices.Equal(g.KeyIDs, f.keys) {
		t.Fatalf("OAuthAccess = %+v, %v", g, err)
	}
	for name, call := range map[string]func() error{
		"unknown":       func() error { _, err := s.OAuthAccess(ctx, memory.HashToken("munin_oat_x"), f.now); return err },
		"refresh token": func() error { _, err := s.OAuthAccess(ctx, refresh, f.now); return err },
		"expired":       func() error { _, err := s.OAuthAccess(ctx, access, f.now.Add(memory.OAuthAccessTTL)); return err },
		"empty":         func() error { _, err := s.OAuthAccess(ctx, "", f.now); return err },
	} {
		if err := call(); !errors.Is(err, ErrOAuthTokenInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if memory.PublicMessage(ErrOAuthTokenInvalid) != "unauthorized: unknown, expired or revoked token" {
		t.Fatalf("message %q", memory.PublicMessage(ErrOAuthTokenInvalid))
	}
	// A grant past its own expiry ends its access tokens too.
	short, err := s.CreateOAuthGrant(ctx, memory.OAuthGrant{ClientID: f.client.ID, Resource: "r", KeyIDs: f.keys, CreatedAt: f.now, ExpiresAt: f.now.Add(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	shortAccess, _ := f.issue(t, short, "short")
	_, err = s.OAuthAccess(ctx, shortAccess, f.now.Add(time.Second))
	wantErr(t, err, ErrOAuthTokenInvalid)

	if err := s.RevokeOAuthGrant(ctx, f.grant); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeOAuthGrant(ctx, f.grant); err != nil {
		t.Fatalf("revoking twice: %v", err)
	}
	wantCode(t, s.RevokeOAuthGrant(ctx, 0), memory.CodeNotFound)
	_, err = s.OAuthAccess(ctx, access, f.now)
	wantErr(t, err, ErrOAuthTokenInvalid)

	// Tokens: all or none, of a grant that exists.
	wantCode(t, s.PutOAuthTokens(ctx, memory.OAuthToken{Hash: "a", GrantID: 7, Kind: memory.OAuthAccess, ExpiresAt: f.now}), memory.CodeNotFound)
	before := f.count(t, "oauth_tokens")
	err = s.PutOAuthTokens(ctx, memory.OAuthToken{Hash: "b", GrantID: short, Kind: memory.OAuthAccess, ExpiresAt: f.now},
		memory.OAuthToken{Hash: access, GrantID: short, Kind: memory.OAuthRefresh, ExpiresAt: f.now})
	wantCode(t, err, memory.CodeConflict)
	wantCode(t, s.PutOAuthTokens(ctx, memory.OAuthToken{Hash: "c", GrantID: short, Kind: "id", ExpiresAt: f.now}), memory.CodeInvalid)
	wantCode(t, s.PutOAuthTokens(ctx, memory.OAuthToken{Hash: "", GrantID: short, Kind: memory.OAuthAccess, ExpiresAt: f.now}), memory.CodeInvalid)
	if n := f.count(t, "oauth_tokens"); n != before {
		t.Fatalf("refused tokens stored: %d → %d", before, n)
	}
}

// Revoking one key of a two-key grant ends its access and refresh tokens at
// once: the caller never goes on with the other key alone.
func TestOAuthRevokingAKeyEndsItsGrants(t *testing.T) {
	for _, how := range []string{"RevokeKey", "RevokeProjectKey"} {
		t.Run(how, func(t *testing.T) {
			f := newOAuthFixture(t)
			s, ctx := f.s, context.Background()
			other := f.newGrant(t, f.keys[1]) // holds only the key that stays
			access, refresh := f.issue(t, f.grant, "one")
			otherAccess, _ := f.issue(t, other, "other")
			var err error
			if how == "RevokeKey" {
				err = s.RevokeKey(ctx, f.keys[0])
			} else {
				err = s.RevokeProjectKey(ctx, f.ref, f.keys[0])
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.OAuthAccess(ctx, access, f.now)
			wantErr(t, err, ErrOAuthTokenInvalid)
			a, r := f.pair("two")
			_, err = s.RotateOAuthRefresh(ctx, refresh, a, r, f.now)
			wantErr(t, err, ErrOAuthRefreshInvalid)
			if !f.grantRevoked(t, f.grant) || f.grantRevoked(t, other) {
				t.Fatalf("grant of the revoked key revoked: %v; other grant revoked: %v", f.grantRevoked(t, f.grant), f.grantRevoked(t, other))
			}
			if _, err := s.OAuthAccess(ctx, otherAccess, f.now); err != nil {
				t.Fatalf("a grant without the revoked key: %v", err)
			}
		})
	}
	// The messages of RevokeProjectKey are unchanged: another project's key
	// is not_found and revokes no grant.
	f := newOAuthFixture(t)
	err := f.s.RevokeProjectKey(context.Background(), memory.ProjectRef{Workspace: "acme", Project: "other"}, f.keys[0])
	wantCode(t, err, memory.CodeNotFound)
	if memory.PublicMessage(err) != fmt.Sprintf("not_found: key %d not found", f.keys[0]) || f.grantRevoked(t, f.grant) {
		t.Fatalf("%v; grant revoked %v", err, f.grantRevoked(t, f.grant))
	}
}

// A grant one of whose keys is revoked is dead even where the revocation
// did not revoke the grant (a binary before the cascade, a hand edit): the
// access check reads every key.
func TestOAuthAccessChecksEveryKey(t *testing.T) {
	f := newOAuthFixture(t)
	ctx := context.Background()
	access, refresh := f.issue(t, f.grant, "one")
	h := f.code(t, f.grant, "one")
	if _, err := f.s.control.writer.ExecContext(ctx, `UPDATE keys SET revoked_at = 1 WHERE id = ?`, f.keys[1]); err != nil {
		t.Fatal(err)
	}
	_, err := f.s.OAuthAccess(ctx, access, f.now)
	wantErr(t, err, ErrOAuthTokenInvalid)
	a, r := f.pair("two")
	_, err = f.s.RotateOAuthRefresh(ctx, refresh, a, r, f.now)
	wantErr(t, err, ErrOAuthRefreshInvalid)
	_, _, err = f.s.ConsumeOAuthCode(ctx, h, f.now)
	wantErr(t, err, ErrOAuthCodeInvalid)
}
