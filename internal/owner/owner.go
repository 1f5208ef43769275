// Package owner runs, on one cluster node, the workspaces this node owns:
// it routes each workspace's calls (here, or to the owner elsewhere),
// campaigns for workspaces nobody owns, takes a workspace over (restore from
// the replica at the previous epoch, integrity check, start replicating into
// a new epoch), gates every write batch on the replica and the lease, and
// lets go of a workspace whose ownership was lost.
//
// The rules it keeps (docs/architecture.md#the-cluster-write-path):
//   - A batch commits only while the node may still own the workspace
//     (BeforeCommit), and is acknowledged only once the replica holds it
//     (sync mode) and the ownership is still valid after that (AfterCommit).
//     So no acknowledged write is missing from the replica a successor
//     restores, and a node whose lease ran out commits nothing more.
//   - A successor restores the epoch the last owner recorded after its first
//     complete sync; every epoch replicates into its own directory, so a
//     stale owner can only ever add to an epoch that nobody reads again.
package owner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"munin/internal/memory"
	"munin/internal/remote"
)

// Cluster is this node's membership (internal/cluster.Node behind an adapter).
type Cluster interface {
	// Self is this node's advertised URL.
	Self() string
	// Valid is false once this node's lease may have run out (etcd lost).
	Valid() bool
	// Live lists the advertised URLs of the live nodes.
	Live() []string
	// Owner tells who owns a workspace now and at which epoch.
	Owner(ws string) (url string, epoch int64, ok bool)
	// Campaign makes this node the workspace's owner if no node owns it
	// (an error otherwise, or when ctx ends first).
	Campaign(ctx context.Context, ws string) (Claim, error)
	// PreviousEpoch is the epoch the last owner recorded (0: none ever).
	PreviousEpoch(ctx context.Context, ws string) (int64, error)
}

// Claim is this node's ownership of one workspace.
type Claim interface {
	Epoch() int64
	// Valid is false from the moment the node may no longer own it.
	Valid() bool
	// Lost is closed when the ownership is gone for good.
	Lost() <-chan struct{}
	// RecordEpoch records this epoch as the one a successor restores, fenced
	// by the ownership.
	RecordEpoch(ctx context.Context) error
	// Resign gives the ownership up.
	Resign(ctx context.Context) error
}

// Replicator streams workspace files to the replica (internal/replica
// behind an adapter).
type Replicator interface {
	// Register starts replicating path into a fresh location (an epoch's).
	Register(ctx context.Context, path, replicaURL string) error
	// Resume replicates path again where it left off (after the
	// replicator restarted).
	Resume(ctx context.Context, path, replicaURL string) error
	// Sync returns once the replica holds everything committed to path.
	Sync(ctx context.Context, path string) error
	Unregister(ctx context.Context, path string) error
	// Restore writes the newest state of replicaURL to out, integrity
	// checked; empty reports a replica that holds nothing.
	Restore(ctx context.Context, replicaURL, out string) (empty bool, err error)
	// EpochURL is where a workspace replicates at an epoch.
	EpochURL(ws string, epoch int64) string
}

// Options configures a Manager.
type Options struct {
	// DataDir holds the workspace files.
	DataDir string
	// Async acknowledges writes before the replica holds them; the replica
	// is synced every SyncEvery, and past LagMax unreplicated writes are
	// refused.
	Async            bool
	SyncEvery        time.Duration
	LagMax           time.Duration
	SyncTimeout      time.Duration // one sync's bound (sync mode)
	RouteWait        time.Duration // longest a call waits for an owner
	RankStep         time.Duration // rank r campaigns r × RankStep late
	CampaignDuration time.Duration // one campaign's bound
	// Rank orders the live nodes by preference for a workspace.
	Rank   func(ws string, nodes []string) []string
	Logger *slog.Logger
}

// Defaults of a zero Options.
const (
	DefaultSyncEvery   = time.Second
	DefaultLagMax      = 10 * time.Second
	DefaultSyncTimeout = 5 * time.Second
	DefaultRouteWait   = 15 * time.Second
	DefaultRankStep    = 300 * time.Millisecond
)

// Closer closes one workspace of the store (store.Store.CloseWorkspace).
type Closer interface {
	CloseWorkspace(name string) error
}

// Manager runs this node's workspaces.
type Manager struct {
	c    Cluster
	r    Replicator
	opts Options
	log  *slog.Logger

	mu          sync.Mutex
	held        map[string]*held
	campaigning map[string]bool
	store       Closer
	stop        chan struct{}
	wg          sync.WaitGroup
}

// held is a workspace this node owns.
type held struct {
	claim Claim
	// replicated is when the last sync that succeeded started; dirty when
	// a batch committed after it (async mode's lag).
	mu         sync.Mutex
	replicated time.Time
	dirty      bool
}

// New makes a Manager; SetStore must follow before the first call.
func New(c Cluster, r Replicator, opts Options) *Manager {
	if opts.SyncEvery <= 0 {
		opts.SyncEvery = DefaultSyncEvery
	}
	if opts.LagMax <= 0 {
		opts.LagMax = DefaultLagMax
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = DefaultSyncTimeout
	}
	if opts.RouteWait <= 0 {
		opts.RouteWait = DefaultRouteWait
	}
	if opts.RankStep <= 0 {
		opts.RankStep = DefaultRankStep
	}
	if opts.CampaignDuration <= 0 {
		opts.CampaignDuration = opts.RouteWait
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{c: c, r: r, opts: opts, log: opts.Logger,
		held: map[string]*held{}, campaigning: map[string]bool{}, stop: make(chan struct{})}
}

// SetStore tells the manager how to close a workspace it lost.
func (m *Manager) SetStore(s Closer) {
	m.mu.Lock()
	m.store = s
	m.mu.Unlock()
}

// path is a workspace's file.
func (m *Manager) path(ws string) string { return filepath.Join(m.opts.DataDir, ws+".db") }

// owned returns the workspace's ownership if this node holds it validly.
func (m *Manager) owned(ws string) *held {
	m.mu.Lock()
	h := m.held[ws]
	m.mu.Unlock()
	if h == nil || !h.claim.Valid() {
		return nil
	}
	return h
}

// notOwner is the answer of a node asked to serve a workspace it does not
// (or no longer) own: the router looks the owner up again.
func notOwner(ws string) error {
	return fmt.Errorf("%w: this node does not own workspace %s", remote.ErrMoved, ws)
}

// Owns is the check of a forwarded call (remote.ServerOptions.Owns).
func (m *Manager) Owns(ctx context.Context, ws string, epoch int64) error {
	if h := m.owned(ws); h != nil && h.claim.Epoch() == epoch {
		return nil
	}
	return notOwner(ws)
}

// Route tells where a workspace's calls go (remote.Router.Route). With no
// owner it starts a campaign here if this node is the preferred one, and
// waits (at most RouteWait and ctx) until some node owns it.
func (m *Manager) Route(ctx context.Context, ws string) (remote.Target, error) {
	if err := memory.ValidateName("workspace", ws); err != nil {
		return remote.Target{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, m.opts.RouteWait)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if h := m.owned(ws); h != nil {
			return remote.Target{Self: true, Epoch: h.claim.Epoch()}, nil
		}
		if !m.c.Valid() {
			// Cut off from etcd: this node can neither know the owner
			// nor own anything; it answers at once instead of waiting.
			return remote.Target{}, memory.Errorf(memory.CodeUnavailable,
				"this node lost its connection to the cluster (etcd); retry, or use another node")
		}
		url, epoch, ok := m.c.Owner(ws)
		if ok && url != m.c.Self() {
			return remote.Target{URL: url, Epoch: epoch}, nil
		}
		if !ok {
			m.maybeCampaign(ws)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return remote.Target{}, &memory.Error{Code: memory.CodeUnavailable,
				Message: fmt.Sprintf("no node owns workspace %s yet; retry", ws), Err: ctx.Err()}
		}
	}
}

// maybeCampaign starts one campaign for ws, after a pause by this node's
// rank among the live nodes, unless one is running or the node is closing.
func (m *Manager) maybeCampaign(ws string) {
	m.mu.Lock()
	if m.campaigning[ws] || m.held[ws] != nil {
		m.mu.Unlock()
		return
	}
	select {
	case <-m.stop:
		m.mu.Unlock()
		return
	default:
	}
	m.campaigning[ws] = true
	m.wg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		defer func() {
			m.mu.Lock()
			delete(m.campaigning, ws)
			m.mu.Unlock()
		}()
		m.campaign(ws)
	}()
}

func (m *Manager) campaign(ws string) {
	rank := slices.Index(m.opts.Rank(ws, m.c.Live()), m.c.Self())
	if rank < 0 {
		return // not live: this node's lease is gone
	}
	select {
	case <-time.After(time.Duration(rank) * m.opts.RankStep):
	case <-m.stop:
		return
	}
	if _, _, ok := m.c.Owner(ws); ok {
		return // a node preferred over this one took it
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.CampaignDuration)
	defer cancel()
	go func() {
		select {
		case <-m.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	claim, err := m.c.Campaign(ctx, ws)
	if err != nil {
		if _, _, taken := m.c.Owner(ws); !taken && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			m.log.Warn("campaign", "workspace", ws, "err", err)
		}
		return
	}
	m.adopt(ws, claim)
}

// adopt makes ws this node's until its claim is lost.
func (m *Manager) adopt(ws string, claim Claim) {
	h := &held{claim: claim}
	m.mu.Lock()
	m.held[ws] = h
	m.wg.Add(1)
	m.mu.Unlock()
	go func() {
		defer m.wg.Done()
		stopping := false
		select {
		case <-claim.Lost():
			m.log.Warn("lost workspace", "workspace", ws, "epoch", claim.Epoch())
		case <-m.stop:
			stopping = true
		}
		m.release(ws, h)
		if stopping { // hand over at once instead of after the lease's TTL
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if err := claim.Resign(ctx); err != nil {
				m.log.Warn("resign", "workspace", ws, "err", err)
			}
		}
	}()
	if m.opts.Async {
		m.wg.Add(1)
		go m.syncLoop(ws, h)
	}
}

// release closes a workspace this node no longer owns (or stops owning).
func (m *Manager) release(ws string, h *held) {
	m.mu.Lock()
	if m.held[ws] == h {
		delete(m.held, ws)
	}
	st := m.store
	m.mu.Unlock()
	if st != nil {
		if err := st.CloseWorkspace(ws); err != nil {
			m.log.Warn("close lost workspace", "workspace", ws, "err", err)
		}
	}
}

// followEvery is how often Follow looks for unowned workspaces besides
// looking at every change of the cluster.
const followEvery = time.Second

// Follow campaigns, until Close, for every workspace nobody owns, at every
// change of the cluster (a node left, an owner resigned) and every second:
// the preferred live node takes it (the others after their pause by
// rank), so a failover or a drain does not wait for the next request.
// workspaces lists every workspace of the cluster (the control data).
func (m *Manager) Follow(changed func() <-chan struct{}, workspaces func() []string) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		tick := time.NewTicker(followEvery)
		defer tick.Stop()
		for {
			next := changed()
			for _, ws := range workspaces() {
				if _, _, ok := m.c.Owner(ws); !ok && m.c.Valid() {
					m.maybeCampaign(ws)
				}
			}
			select {
			case <-next:
			case <-tick.C:
			case <-m.stop:
				return
			}
		}
	}()
}
