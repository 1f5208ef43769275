package remote_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/remote"
	"munin/internal/search"
	"munin/internal/service"
	"munin/internal/store"
)

const secret = "test-cluster-secret"

// owner serves a real store and index behind remote.Handler; owns decides
// each call's ownership check.
func owner(t *testing.T, owns remote.Owner) (*store.Store, string) {
	t.Helper()
	st, err := store.Open(t.TempDir(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := search.NewRegistry(st, search.Options{})
	owned := service.NewOwnerBudgeted(st, st, service.Options{})
	srv := httptest.NewServer(remote.Handler(owned, reg, remote.ServerOptions{Secret: secret, Node: "node-a", Owns: owns}))
	t.Cleanup(func() {
		srv.Close()
		_ = reg.Close()
		_ = st.Close()
	})
	return st, srv.URL
}

func router(url string, routes *atomic.Int64) *remote.Router {
	return &remote.Router{
		Client: &remote.Client{Secret: secret},
		Route: func(ctx context.Context, ws string) (remote.Target, error) {
			routes.Add(1)
			return remote.Target{URL: url, Epoch: 7}, nil
		},
	}
}

// A call refused as "moved" is routed again and succeeds once the owner
// accepts it; one that keeps being refused ends as unavailable after a few
// lookups, and nothing was written by the refused tries.
func TestMovedIsRoutedAgain(t *testing.T) {
	var refusals atomic.Int64
	refusals.Store(2)
	var epochs []int64
	st, url := owner(t, func(ctx context.Context, ws string, epoch int64) error {
		epochs = append(epochs, epoch)
		if refusals.Add(-1) >= 0 {
			return remote.ErrMoved
		}
		return nil
	})
	ref := memory.ProjectRef{Workspace: "team", Project: "p"}
	if _, err := st.EnsureProject(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	var routes atomic.Int64
	r := router(url, &routes)
	res, err := r.Append(context.Background(), ref, memory.Write{Slug: "a", Title: "t", Content: "c", Agent: "x"})
	if err != nil || res.Version != 1 {
		t.Fatalf("Append after two refusals: %+v %v", res, err)
	}
	if routes.Load() != 3 || len(epochs) != 3 || epochs[0] != 7 {
		t.Errorf("routes %d, claims %v: want 3 lookups claiming epoch 7", routes.Load(), epochs)
	}

	refusals.Store(1 << 30)
	_, err = r.Append(context.Background(), ref, memory.Write{Slug: "b", Title: "t", Content: "c", Agent: "x"})
	if memory.ErrorCode(err) != memory.CodeUnavailable || !strings.Contains(err.Error(), "moving") {
		t.Fatalf("Append refused every time: %v, want unavailable (moving)", err)
	}
	if _, _, err := st.Get(context.Background(), ref, "b", 0); memory.ErrorCode(err) != memory.CodeNotFound {
		t.Errorf("a refused call wrote: %v", err)
	}
}

// Errors keep their code across the hop; an internal failure arrives as a
// plain error without the owner's details.
func TestErrorsCrossTheHop(t *testing.T) {
	_, url := owner(t, func(context.Context, string, int64) error { return nil })
	var routes atomic.Int64
	r := router(url, &routes)
	ref := memory.ProjectRef{Workspace: "team", Project: "nope"}
	_, _, err := r.Get(context.Background(), ref, "a", 0)
	if memory.ErrorCode(err) != memory.CodeNotFound {
		t.Fatalf("Get in a missing project: %v, want not_found", err)
	}
	_, err = r.History(context.Background(), memory.ProjectRef{Workspace: "team", Project: "p"}, "../x", 5)
	if memory.ErrorCode(err) != memory.CodeInvalid && memory.ErrorCode(err) != memory.CodeNotFound {
		t.Fatalf("History of a bad slug: %v, want invalid or not_found", err)
	}

	_, url2 := owner(t, func(context.Context, string, int64) error { return errors.New("disk on fire at /secret/path") })
	_, err = router(url2, &routes).Append(context.Background(), ref, memory.Write{Slug: "a", Title: "t", Content: "c", Agent: "x"})
	var me *memory.Error
	if err == nil || errors.As(err, &me) || strings.Contains(err.Error(), "/secret/path") || !strings.Contains(err.Error(), "node-a") {
		t.Fatalf("internal failure: %v; want a plain error naming the node and nothing of the cause", err)
	}
}

// Only a caller with the cluster secret and well-formed claims is served,
// and only in this version's encoding.
func TestInternalCallsNeedSecretAndClaims(t *testing.T) {
	_, url := owner(t, func(context.Context, string, int64) error { return nil })
	for _, c := range []struct {
		name, auth, claim string
		want              int
	}{
		{"no secret", "", "team=1", http.StatusUnauthorized},
		{"wrong secret", "Bearer nope", "team=1", http.StatusUnauthorized},
		{"no claim", "Bearer " + secret, "", http.StatusBadRequest},
		{"bad claim", "Bearer " + secret, "../x=1", http.StatusBadRequest},
		{"bad epoch", "Bearer " + secret, "team=-3", http.StatusBadRequest},
		{"not JSON (another version)", "Bearer " + secret, "team=1", http.StatusUnsupportedMediaType},
	} {
		req, _ := http.NewRequest(http.MethodPost, url+remote.PathPrefix+"Get", strings.NewReader("x"))
		req.Header.Set("Content-Type", "application/x-gob")
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		if c.claim != "" {
			req.Header.Set("Munin-Owner-Claim", c.claim)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: status %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
}

// An owner that does not answer makes the call unavailable.
func TestUnreachableOwner(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	var routes atomic.Int64
	_, _, err := router(url, &routes).Get(context.Background(), memory.ProjectRef{Workspace: "team", Project: "p"}, "a", 0)
	if memory.ErrorCode(err) != memory.CodeUnavailable {
		t.Fatalf("Get from a stopped owner: %v, want unavailable", err)
	}
}

// A large flush of the search log crosses the hop in chunks below the body
// cap, and every row arrives.
func TestSearchLogInChunks(t *testing.T) {
	st, url := owner(t, func(context.Context, string, int64) error { return nil })
	ref := memory.ProjectRef{Workspace: "team", Project: "p"}
	if _, err := st.EnsureProject(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	rows := make([]memory.SearchLogRow, 2000)
	for i := range rows {
		rows[i] = memory.SearchLogRow{Project: ref, Agent: "a", Query: strings.Repeat("q", 1000)}
	}
	var routes atomic.Int64
	if err := router(url, &routes).AppendSearchLog(context.Background(), rows); err != nil {
		t.Fatalf("AppendSearchLog of 2,000 rows of 1 KB: %v", err)
	}
	// Keeping the newest row deletes all the others: 1,999 if all arrived.
	deleted, err := st.PruneSearchLog(context.Background(), ref, time.Time{}, 1)
	if err != nil || deleted != 1999 {
		t.Fatalf("search log held %d rows besides the newest (%v), want 1999", deleted, err)
	}
}

// A node that lost its lease while a forwarded call ran answers
// unavailable, even though the owner carried the call out.
func TestInvalidNodeRelaysNothing(t *testing.T) {
	st, url := owner(t, func(context.Context, string, int64) error { return nil })
	ref := memory.ProjectRef{Workspace: "team", Project: "p"}
	if _, err := st.EnsureProject(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	var routes atomic.Int64
	var valid atomic.Bool
	valid.Store(true)
	r := router(url, &routes)
	r.Valid = valid.Load
	if _, err := r.Append(context.Background(), ref, memory.Write{Slug: "a", Title: "t", Content: "c", Agent: "x"}); err != nil {
		t.Fatal(err)
	}
	valid.Store(false)
	_, err := r.Append(context.Background(), ref, memory.Write{Slug: "b", Title: "t", Content: "c", Agent: "x"})
	if memory.ErrorCode(err) != memory.CodeUnavailable {
		t.Fatalf("Append relayed by a node without its lease: %v, want unavailable", err)
	}
}
