package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"munin/internal/memory"
)

func TestOAuthRotateRefresh(t *testing.T) {
	f := newOAuthFixture(t)
	s, ctx := f.s, context.Background()
	access1, refresh1 := f.issue(t, f.grant, "one")
	a2, r2 := f.pair("two")
	a2.GrantID = 12345 // ignored: the pair belongs to the old token's grant
	g, err := s.RotateOAuthRefresh(ctx, refresh1, a2, r2, f.now)
	if err != nil || g.ID != f.grant || g.ClientName != "Claude" || !slices.Equal(g.KeyIDs, f.keys) {
		t.Fatalf("rotate = %+v, %v", g, err)
	}
	if got, err := s.OAuthAccess(ctx, a2.Hash, f.now); err != nil || got.ID != f.grant {
		t.Fatalf("new access token: %+v, %v", got, err)
	}
	a3, r3 := f.pair("three")
	if _, err := s.RotateOAuthRefresh(ctx, r2.Hash, a3, r3, f.now); err != nil {
		t.Fatalf("rotating the new refresh token: %v", err)
	}

	// The first refresh token again is reuse: the family ends, the newest
	// tokens included.
	a4, r4 := f.pair("four")
	_, err = s.RotateOAuthRefresh(ctx, refresh1, a4, r4, f.now)
	wantErr(t, err, ErrOAuthRefreshReused)
	wantCode(t, err, memory.CodeInvalid)
	if !f.grantRevoked(t, f.grant) {
		t.Fatal("refresh reuse left the grant live")
	}
	for _, h := range []string{access1, a2.Hash, a3.Hash} {
		_, err := s.OAuthAccess(ctx, h, f.now)
		wantErr(t, err, ErrOAuthTokenInvalid)
	}
	_, err = s.RotateOAuthRefresh(ctx, r3.Hash, a4, r4, f.now)
	wantErr(t, err, ErrOAuthRefreshInvalid)
}

func TestOAuthRotateRefusals(t *testing.T) {
	f := newOAuthFixture(t)
	s, ctx := f.s, context.Background()
	access, refresh := f.issue(t, f.grant, "one")
	a, r := f.pair("two")
	tokens := f.count(t, "oauth_tokens")

	for name, old := range map[string]string{"unknown": memory.HashToken("munin_ort_x"), "an access token": access} {
		if _, err := s.RotateOAuthRefresh(ctx, old, a, r, f.now); !errors.Is(err, ErrOAuthRefreshInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err := s.RotateOAuthRefresh(ctx, refresh, a, r, f.now.Add(memory.OAuthRefreshTTL))
	wantErr(t, err, ErrOAuthRefreshInvalid)
	_, err = s.RotateOAuthRefresh(ctx, refresh, r, a, f.now) // kinds swapped
	wantCode(t, err, memory.CodeInvalid)
	bad := a
	bad.Hash = ""
	_, err = s.RotateOAuthRefresh(ctx, refresh, bad, r, f.now)
	wantCode(t, err, memory.CodeInvalid)
	// A new hash that is taken fails the whole rotation: the old token stays unused.
	taken := a
	taken.Hash = access
	_, err = s.RotateOAuthRefresh(ctx, refresh, taken, r, f.now)
	wantCode(t, err, memory.CodeConflict)
	if f.grantRevoked(t, f.grant) || f.count(t, "oauth_tokens") != tokens {
		t.Fatalf("refused rotations changed something: grant revoked %v, tokens %d → %d", f.grantRevoked(t, f.grant), tokens, f.count(t, "oauth_tokens"))
	}
	if _, err := s.RotateOAuthRefresh(ctx, refresh, a, r, f.now); err != nil {
		t.Fatalf("the refresh token after refused rotations: %v", err)
	}
}

// Sixteen exchanges of one code race: exactly one gets the grant, the
// others are reuse, and the grant is revoked because of it. Run with -race.
func TestOAuthCodeRace(t *testing.T) {
	f := newOAuthFixture(t)
	h := f.code(t, f.grant, "raced")
	errs := race(16, func(int) error {
		_, _, err := f.s.ConsumeOAuthCode(context.Background(), h, f.now)
		return err
	})
	checkOneWinner(t, errs, ErrOAuthCodeReused)
	if !f.grantRevoked(t, f.grant) {
		t.Fatal("the losers' reuse did not revoke the grant")
	}
}

// Sixteen rotations of one refresh token race: exactly one succeeds, the
// others are reuse, and the family ends.
func TestOAuthRefreshRace(t *testing.T) {
	f := newOAuthFixture(t)
	_, refresh := f.issue(t, f.grant, "one")
	winners := make([]string, 16)
	errs := race(16, func(i int) error {
		a, r := f.pair(fmt.Sprint("new", i))
		_, err := f.s.RotateOAuthRefresh(context.Background(), refresh, a, r, f.now)
		if err == nil {
			winners[i] = a.Hash
		}
		return err
	})
	checkOneWinner(t, errs, ErrOAuthRefreshReused)
	if !f.grantRevoked(t, f.grant) {
		t.Fatal("the losers' reuse did not revoke the grant")
	}
	for _, h := range winners {
		if h != "" {
			_, err := f.s.OAuthAccess(context.Background(), h, f.now)
			wantErr(t, err, ErrOAuthTokenInvalid)
		}
	}
}

// race runs call n times at once and returns their errors.
func race(n int, call func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = call(i)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// checkOneWinner fails unless exactly one err is nil and all others are reused.
func checkOneWinner(t *testing.T, errs []error, reused error) {
	t.Helper()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, reused):
			t.Errorf("a loser's error: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d won, want 1", won, len(errs))
	}
}
