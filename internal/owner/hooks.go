package owner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"munin/internal/memory"
	"munin/internal/replica"
	"munin/internal/store"
)

// The store calls these around a workspace's life on this node (they are
// the Manager's part of store.Cluster, whose doc states when each runs, in
// which goroutine, and what its error means): open = restore + replicate,
// every batch = fence + sync, close = last sync + let go. The application
// adds ProjectExists from the cluster's control data (internal/app,
// cluster_store.go).

// BeforeOpen restores the workspace from the epoch its last owner
// recorded, replacing whatever local file this node had (a node that owned
// it before may hold writes that never reached the replica).
func (m *Manager) BeforeOpen(ctx context.Context, ws string) error {
	if m.owned(ws) == nil {
		return notOwner(ws)
	}
	prev, err := m.c.PreviousEpoch(ctx, ws)
	if err != nil {
		return unavailable(fmt.Sprintf("cannot read the replica position of workspace %s", ws), err)
	}
	path := m.path(ws)
	if err := removeLocal(path); err != nil {
		return fmt.Errorf("take over workspace %s: %w", ws, err)
	}
	if prev == 0 {
		return nil // never replicated: a new workspace starts empty
	}
	url := m.r.EpochURL(ws, prev)
	empty, err := m.r.Restore(ctx, url, path)
	if err != nil {
		return unavailable(fmt.Sprintf("cannot restore workspace %s from the replica", ws), err)
	}
	if empty {
		// The epoch was recorded only after its first complete sync.
		return unavailable(fmt.Sprintf("the replica of workspace %s at epoch %d is empty", ws, prev), errors.New(url))
	}
	m.log.Info("restored workspace", "workspace", ws, "from_epoch", prev)
	return nil
}

// AfterOpen checks the file, starts replicating it into this epoch's
// directory, waits for the first complete copy and records the epoch.
func (m *Manager) AfterOpen(ctx context.Context, ws string) error {
	h := m.owned(ws)
	if h == nil {
		return notOwner(ws)
	}
	path := m.path(ws)
	if err := store.CheckIntegrity(ctx, path); err != nil {
		return unavailable(fmt.Sprintf("workspace %s failed its integrity check", ws), err)
	}
	if err := m.r.Register(ctx, path, m.r.EpochURL(ws, h.claim.Epoch())); err != nil {
		return unavailable(fmt.Sprintf("cannot replicate workspace %s", ws), err)
	}
	if err := m.r.Sync(ctx, path); err != nil {
		return unavailable(fmt.Sprintf("cannot replicate workspace %s", ws), err)
	}
	if err := h.claim.RecordEpoch(ctx); err != nil {
		return notOwner(ws)
	}
	h.mu.Lock()
	h.replicated = time.Now()
	h.mu.Unlock()
	return nil
}

// BeforeCommit refuses a batch once the node may no longer own the
// workspace, or (async) when the replica is too far behind.
func (m *Manager) BeforeCommit(ws string) error {
	h := m.owned(ws)
	if h == nil {
		return unavailable(fmt.Sprintf("this node no longer owns workspace %s; retry", ws), nil)
	}
	if m.opts.Async {
		if lag := h.lag(); lag > m.opts.LagMax {
			return unavailable(fmt.Sprintf("replication of workspace %s is %s behind (bound %s); retry", ws, lag.Round(time.Millisecond), m.opts.LagMax), nil)
		}
	}
	return nil
}

// AfterCommit acknowledges a batch: in sync mode once the replica holds
// it, and only if the ownership is still valid after that.
func (m *Manager) AfterCommit(ws string) error {
	h := m.owned(ws)
	if h == nil {
		return unavailable(fmt.Sprintf("this node no longer owns workspace %s; retry", ws), nil)
	}
	if m.opts.Async {
		h.mu.Lock()
		h.dirty = true
		h.mu.Unlock()
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.SyncTimeout)
	defer cancel()
	start := time.Now()
	if err := m.r.Sync(ctx, m.path(ws)); err != nil {
		return unavailable(fmt.Sprintf("the replica did not confirm the write to workspace %s; retry", ws), err)
	}
	h.mu.Lock()
	h.replicated = start
	h.mu.Unlock()
	if !h.claim.Valid() {
		return unavailable(fmt.Sprintf("this node lost workspace %s while replicating; retry", ws), nil)
	}
	return nil
}

// BeforeClose syncs what is left and lets the replicator go.
func (m *Manager) BeforeClose(ws string) {
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.SyncTimeout)
	defer cancel()
	path := m.path(ws)
	if err := m.r.Sync(ctx, path); err != nil {
		m.log.Warn("last sync of workspace", "workspace", ws, "err", err)
	}
	if err := m.r.Unregister(ctx, path); err != nil {
		m.log.Warn("stop replicating workspace", "workspace", ws, "err", err)
	}
}

// Reregister makes a restarted replicator replicate every workspace this
// node has open again, each into its epoch's location where it left off.
// Until then syncs fail, and writes with them (sync mode).
func (m *Manager) Reregister(ctx context.Context) {
	m.mu.Lock()
	type one struct {
		ws    string
		epoch int64
	}
	var open []one
	for ws, h := range m.held {
		h.mu.Lock()
		if !h.replicated.IsZero() {
			open = append(open, one{ws, h.claim.Epoch()})
		}
		h.mu.Unlock()
	}
	m.mu.Unlock()
	for _, o := range open {
		if err := m.r.Resume(ctx, m.path(o.ws), m.r.EpochURL(o.ws, o.epoch)); err != nil {
			m.log.Error("replicate again after the replicator restarted", "workspace", o.ws, "err", err)
		}
	}
}

// lag is how long committed writes have waited for the replica (0: none
// waiting).
func (h *held) lag() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.dirty || h.replicated.IsZero() {
		return 0
	}
	return time.Since(h.replicated)
}

// syncLoop replicates an owned workspace every SyncEvery (async mode).
func (m *Manager) syncLoop(ws string, h *held) {
	defer m.wg.Done()
	tick := time.NewTicker(m.opts.SyncEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-h.claim.Lost():
			return
		case <-m.stop:
			return
		}
		h.mu.Lock()
		dirty, opened := h.dirty, !h.replicated.IsZero()
		h.dirty = false
		h.mu.Unlock()
		if !dirty || !opened {
			continue
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), m.opts.SyncTimeout)
		err := m.r.Sync(ctx, m.path(ws))
		cancel()
		h.mu.Lock()
		if err != nil {
			h.dirty = true
			m.log.Warn("replicate workspace", "workspace", ws, "err", err)
		} else {
			h.replicated = start
		}
		h.mu.Unlock()
	}
}

// Lag is the largest replication lag of the workspaces this node owns
// (the replication lag metric).
func (m *Manager) Lag() time.Duration {
	m.mu.Lock()
	hs := make([]*held, 0, len(m.held))
	for _, h := range m.held {
		hs = append(hs, h)
	}
	m.mu.Unlock()
	var worst time.Duration
	for _, h := range hs {
		worst = max(worst, h.lag())
	}
	return worst
}

// Close lets go of every workspace (handing each over at once) and waits
// for the manager's goroutines.
func (m *Manager) Close() {
	m.mu.Lock()
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	m.mu.Unlock()
	m.wg.Wait()
}

func unavailable(msg string, err error) error {
	return &memory.Error{Code: memory.CodeUnavailable, Message: msg, Err: err}
}

// removeLocal deletes a workspace's local file with its WAL, shared
// memory and the replicator's state beside it.
func removeLocal(path string) error {
	for _, p := range []string{path, path + "-wal", path + "-shm", replica.MetaDir(path)} {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	return nil
}
