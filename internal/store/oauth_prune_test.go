package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
)

// A control database made by the migrations before OAuth opens with its
// keys intact, gains the OAuth tables, and a grant of an existing key works.
func TestControlMigrationAddsOAuth(t *testing.T) {
	dir := t.TempDir()
	ms, err := loadMigrations(schemaControl)
	if err != nil {
		t.Fatal(err)
	}
	const before = 4 // the last step without OAuth
	db, err := sql.Open("sqlite3", writerDSN(filepath.Join(dir, controlFile), "FULL"))
	if err != nil {
		t.Fatal(err)
	}
	token := "munin_" + "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"
	stmts := []string{}
	for _, m := range ms[:before] {
		stmts = append(stmts, m.sql)
	}
	stmts = append(stmts, fmt.Sprintf("PRAGMA user_version = %d", before),
		`INSERT INTO workspaces (name, created_at) VALUES ('acme', 1)`,
		`INSERT INTO projects (workspace, name, created_at) VALUES ('acme', 'alpha', 1)`,
		`INSERT INTO keys (id, workspace, project, agent, role, hash, created_at) VALUES (77, 'acme', 'alpha', 'alice', 'propose', '`+memory.HashToken(token)+`', 1)`)
	for _, stmt := range stmts {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%.60s: %v", stmt, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s := openAt(t, dir)
	ctx := context.Background()
	if k, err := s.KeyByToken(ctx, token); err != nil || k.ID != 77 {
		t.Fatalf("key after the migration = %+v, %v", k, err)
	}
	var v int
	if err := rawDB(t, filepath.Join(dir, controlFile)).QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != len(ms) || v <= before {
		t.Fatalf("user_version %d (%v), want %d", v, err, len(ms))
	}
	if err := s.PutOAuthClient(ctx, memory.OAuthClient{ID: "c", Kind: memory.OAuthClientDCR, Name: "C"}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	id, err := s.CreateOAuthGrant(ctx, memory.OAuthGrant{ClientID: "c", Resource: "r", KeyIDs: []int64{77}, ExpiresAt: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutOAuthTokens(ctx, memory.OAuthToken{Hash: "h", GrantID: id, Kind: memory.OAuthAccess, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if g, err := s.OAuthAccess(ctx, "h", now); err != nil || len(g.KeyIDs) != 1 || g.KeyIDs[0] != 77 {
		t.Fatalf("access after the migration = %+v, %v", g, err)
	}
	if err := s.RevokeKey(ctx, 77); err != nil {
		t.Fatal(err)
	}
	if _, err := s.OAuthAccess(ctx, "h", now); memory.ErrorCode(err) != memory.CodeUnauthorized {
		t.Fatalf("access after revoking its key: %v", err)
	}
}

// PruneOAuth deletes expired codes (after an hour's grace) and tokens, and
// grants long expired or revoked with everything of them, a bounded chunk
// per call; what still works stays.
func TestPruneOAuth(t *testing.T) {
	f := newOAuthFixture(t)
	s, ctx := f.s, context.Background()
	f.issue(t, f.grant, "live") // access: now+1h, refresh: now+30d
	f.code(t, f.grant, "code")  // now+1m
	expired := make([]memory.OAuthToken, oauthPruneChunk+10)
	for i := range expired {
		expired[i] = memory.OAuthToken{Hash: fmt.Sprint("expired", i), GrantID: f.grant, Kind: memory.OAuthAccess, ExpiresAt: f.now.Add(time.Minute)}
	}
	if err := s.PutOAuthTokens(ctx, expired...); err != nil {
		t.Fatal(err)
	}
	gone := f.newGrant(t, f.keys[0])
	f.issue(t, gone, "gone")
	if err := s.RevokeOAuthGrant(ctx, gone); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		at   time.Time
		want []int64 // per call
	}{
		// The expired tokens go, a chunk per call; the code is kept for
		// reuse detection, the grant revoked a moment ago too.
		{f.now.Add(2 * time.Minute), []int64{oauthPruneChunk, 10, 0}},
		// Past the code's grace: the code and both access tokens.
		{f.now.Add(oauthCodeKeep + 2*time.Minute), []int64{3, 0}},
		// Past the refresh tokens' expiry and the revoked grant's keep: both
		// refresh tokens and the grant (its key ids go with it, uncounted).
		{f.now.Add(oauthGrantKeep + 2*time.Hour), []int64{3, 0}},
	}
	for i, st := range steps {
		for j, want := range st.want {
			if n, err := s.PruneOAuth(ctx, st.at); err != nil || n != want {
				t.Fatalf("step %d, call %d: pruned %d, %v; want %d", i, j, n, err, want)
			}
		}
	}
	var left int
	if err := rawDB(t, s.control.path).QueryRow(`SELECT (SELECT count(*) FROM oauth_grants WHERE id = ?1)
		+ (SELECT count(*) FROM oauth_grant_keys WHERE grant_id = ?1)`, gone).Scan(&left); err != nil || left != 0 {
		t.Fatalf("rows of the pruned grant left: %d (%v)", left, err)
	}
	if g, k, c, tk := f.count(t, "oauth_grants"), f.count(t, "oauth_grant_keys"), f.count(t, "oauth_codes"), f.count(t, "oauth_tokens"); g != 1 || k != 2 || c != 0 || tk != 0 {
		t.Fatalf("left: %d grants (want the live one), %d grant keys (want 2), %d codes, %d tokens", g, k, c, tk)
	}
}

// The statements of the hot OAuth paths are compiled once, whatever the
// values (see stmtCacheSize).
func TestOAuthStatementsArePreparedOnce(t *testing.T) {
	f := newOAuthFixture(t)
	s, ctx := f.s, context.Background()
	var compiled atomic.Int64
	for _, db := range []*sql.DB{s.control.reader, s.control.writer} {
		countCompiles(t, db, &compiled)
	}
	refresh := make([]string, 13)
	_, refresh[0] = f.issue(t, f.grant, "r0")
	for _, c := range []stmtCase{
		{"OAuthAccess", func(i int) error {
			_, err := s.OAuthAccess(ctx, memory.HashToken(fmt.Sprint("munin_oat_", i)), f.now.Add(time.Duration(i)))
			return okIf(err, memory.CodeUnauthorized)
		}},
		{"ConsumeOAuthCode", func(i int) error {
			h := f.code(t, f.grant, fmt.Sprint("c", i))
			_, _, err := s.ConsumeOAuthCode(ctx, h, f.now.Add(time.Duration(i)))
			return err
		}},
		{"RotateOAuthRefresh", func(i int) error {
			a, r := f.pair(fmt.Sprint("p", i))
			_, err := s.RotateOAuthRefresh(ctx, refresh[i], a, r, f.now.Add(time.Duration(i)))
			refresh[i+1] = r.Hash
			return err
		}},
	} {
		if n, err := compilesAfterFirst(&compiled, c.run); err != nil || n != 0 {
			t.Errorf("%s: %v; SQLite compiled again in 10 more runs (%d authorizer calls)", c.name, err, n)
		}
	}
}

// BenchmarkOAuthAccess is the cost of authenticating a request by an
// access token of a two-key grant (uncached: one read of the control
// database); BenchmarkKeyByTokenCached is a key's, from the key cache.
func BenchmarkOAuthAccess(b *testing.B) {
	f := newOAuthFixture(b)
	access, _ := f.issue(b, f.grant, "bench")
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := f.s.OAuthAccess(ctx, access, f.now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkKeyByTokenCached(b *testing.B) {
	s := openTest(b)
	token, _, err := s.CreateKey(context.Background(), ensure(b, s, "acme", "alpha"), "bench", memory.RoleWrite)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		if _, err := s.KeyByToken(ctx, token); err != nil {
			b.Fatal(err)
		}
	}
}
