package servicetest

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"munin/internal/remote"
	"munin/internal/search"
	"munin/internal/service"
	"munin/internal/store"
)

// RemoteEnv, set to 1, makes every Env route the data half of the store and
// the search index through the cluster's internal calls (package remote)
// to an owner served on 127.0.0.1, as a cluster node that does not own the
// workspace does: `MUNIN_SERVICETEST_REMOTE=1 go test ./internal/...` runs
// the tests of every layer above the service across that hop.
const RemoteEnv = "MUNIN_SERVICETEST_REMOTE"

// throughRemote builds a service whose data calls and index go over HTTP
// to an owner serving st and reg.
func throughRemote(t testing.TB, st *store.Store, reg *search.Registry, opts service.Options) *service.Service {
	t.Helper()
	const secret = "servicetest-cluster-secret"
	// The owner counts the write budget, as a cluster node does for the
	// workspaces it owns; the service asks it for a project's usage.
	owner := httptest.NewServer(remote.Handler(service.NewOwnerBudgeted(st, st, opts), reg, remote.ServerOptions{
		Secret: secret,
		Node:   "owner",
		Owns:   func(context.Context, string, int64) error { return nil },
	}))
	t.Cleanup(owner.Close)
	router := &remote.Router{
		Local:  nil, // every call crosses the hop
		Client: &remote.Client{Secret: secret},
		Route: func(context.Context, string) (remote.Target, error) {
			return remote.Target{URL: owner.URL, Epoch: 1}, nil
		},
	}
	opts.BudgetAtOwner = router
	// Commits on the owner do not signal here, as on a cluster node that
	// does not own the workspace: watchers hear them by reading the feed.
	if opts.FeedPoll == 0 {
		opts.FeedPoll = 20 * time.Millisecond
	}
	return service.New(service.Split{ControlStore: st, DataStore: router}, router, opts)
}
