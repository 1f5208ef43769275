package service_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"
)

// TestOAuthSignInPrunes: a sign-in an hour or more after the last one
// deletes the codes that expired long ago, so dead rows do not pile up.
func TestOAuthSignInPrunes(t *testing.T) {
	e := newOAuthEnv(t)
	if _, err := e.env.Svc.AuthorizeOAuth(ctx, e.person, e.request()); err != nil { // never redeemed
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(e.env.Dir, "_control.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	codes := func() int {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM oauth_codes`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := codes(); n != 1 {
		t.Fatalf("%d codes after one sign-in", n)
	}
	e.clock.add(3 * time.Hour)
	if _, err := e.env.Svc.AuthorizeOAuth(ctx, e.person, e.request()); err != nil {
		t.Fatal(err)
	}
	if n := codes(); n != 1 {
		t.Errorf("%d codes after the next sign-in three hours later; want only its own (the expired one pruned)", n)
	}
}
