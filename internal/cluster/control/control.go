// Package control keeps Munin's control data — workspaces, projects with
// their write budgets, and keys (only their token hashes) — in etcd, so that
// every node of a cluster sees the same data, and serves it from a cache fed
// by an etcd watch, so that authenticating a request costs a map lookup.
//
// A *Control has exactly the semantics of the control half of *store.Store
// (the same validation, errors and codes); the contract test runs one table
// against both. What differs is where the data lives and what that costs:
//
//   - Writes are etcd transactions, so concurrent writers on several nodes
//     stay consistent (a project is created once, key ids never clash).
//   - Reads come from the cache. A node sees its own writes at once and other
//     nodes' writes within the watch delay (milliseconds while etcd is
//     healthy). A lookup by token, key id or project that misses the cache
//     asks etcd once (linearizable) before answering, so a key made on
//     another node a moment ago works at once everywhere.
//   - While etcd is unreachable, cached reads go on (keys authenticate,
//     revoked keys stay refused, projects and budgets are known), lookups
//     that miss the cache and all writes answer memory.CodeUnavailable.
//     A revocation made elsewhere meanwhile takes effect on this node when
//     its watch resumes.
package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"munin/internal/memory"
)

// DefaultPrefix is the etcd key prefix of a Munin cluster when Options.Prefix is empty.
const DefaultPrefix = "/munin"

// DefaultTimeout bounds each etcd request when Options.Timeout is zero: a
// write or cache miss waits at most this long for an unreachable etcd
// before it answers unavailable.
const DefaultTimeout = 5 * time.Second

// loadPage is how many records one Get of the initial load returns; the
// pages are read at one revision, so together they are one snapshot.
const loadPage = 1000

// maxMisses bounds this node's concurrent etcd lookups for cache misses, so a
// flood of made-up tokens costs etcd a bounded load.
const maxMisses = 16

// lastUsedQueue bounds the last_used_at updates waiting to be written; past
// it an update is dropped (last_used_at is a hint, the request goes on).
const lastUsedQueue = 1024

// Options configures a Control.
type Options struct {
	// Prefix is the etcd key prefix of the cluster (DefaultPrefix if empty);
	// control data lives under <Prefix>/ctl/.
	Prefix string
	// Logger receives warnings (nil: slog.Default()). Tokens are never logged.
	Logger *slog.Logger
	// Timeout bounds each etcd request (DefaultTimeout if zero).
	Timeout time.Duration

	// hookBeforeWatch, if set, runs before each watch starts, with the
	// revision the cache holds (tests use it to hold the watch back).
	hookBeforeWatch func(rev int64)
	// hookKeyID, if set, replaces each drawn key id (tests force collisions).
	hookKeyID func(int64) int64
}

// Control is the etcd-backed control data of one node. It is safe for
// concurrent use. Close stops its watch; the etcd client stays the caller's.
type Control struct {
	cli   *clientv3.Client
	opts  Options
	paths paths
	cache *cache
	log   *slog.Logger

	keyUse   memory.KeyThrottle
	lastUsed chan lastUse
	misses   chan struct{} // semaphore of cache-miss lookups
	etcdGets atomic.Int64  // cache-miss lookups sent to etcd, for tests

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// Open loads all control data under the prefix with one snapshot read and
// starts the watch that keeps the cache current. It fails, naming the etcd
// endpoints, if etcd does not answer within the timeout.
func Open(ctx context.Context, cli *clientv3.Client, opts Options) (*Control, error) {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if !strings.HasPrefix(opts.Prefix, "/") {
		return nil, fmt.Errorf("control: etcd prefix %q must start with /", opts.Prefix)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	p := paths{ctl: strings.TrimRight(opts.Prefix, "/") + "/ctl/"}
	c := &Control{
		cli: cli, opts: opts, paths: p, log: opts.Logger,
		cache:    newCache(p, opts.Logger),
		lastUsed: make(chan lastUse, lastUsedQueue),
		misses:   make(chan struct{}, maxMisses),
	}
	if err := c.load(ctx); err != nil {
		return nil, fmt.Errorf("control: load control data from etcd %v: %w", cli.Endpoints(), err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.wg.Add(2)
	go c.watch(runCtx)
	go c.writeLastUsed(runCtx)
	return c, nil
}

// Close stops the watch and the last_used_at writer; updates still queued
// are dropped. It does not close the etcd client.
func (c *Control) Close() error {
	c.once.Do(func() {
		c.cancel()
		c.wg.Wait()
	})
	return nil
}

// Revision returns the etcd revision the cache has seen everything up to.
func (c *Control) Revision() int64 { return c.cache.revision() }

// load replaces the cache with a snapshot of everything under the prefix,
// read in pages at one revision.
func (c *Control) load(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	end := clientv3.GetPrefixRangeEnd(c.paths.ctl)
	from, rev := c.paths.ctl, int64(0)
	var all []*mvccpb.KeyValue
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(loadPage)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := c.cli.Get(ctx, from, opts...)
		if err != nil {
			return err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		all = append(all, resp.Kvs...)
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	c.cache.replace(all, rev)
	return nil
}

// watch keeps the cache current until ctx ends. When the watch fails
// (compaction past the cache's revision, no leader, a closed stream) it
// reloads everything and watches again from the reload's revision, retrying
// with backoff while etcd is unreachable; the cache serves reads meanwhile.
func (c *Control) watch(ctx context.Context) {
	defer c.wg.Done()
	const first, most = 100 * time.Millisecond, 5 * time.Second
	backoff := first
	for {
		rev := c.cache.revision()
		if c.opts.hookBeforeWatch != nil {
			c.opts.hookBeforeWatch(rev)
		}
		// RequireLeader: a member cut off from the leader ends the watch
		// instead of keeping it open and silent.
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		delivered := false
		for resp := range c.cli.Watch(wctx, c.paths.ctl, clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
			if err := resp.Err(); err != nil {
				c.log.Warn("control watch ended; reloading from etcd", "err", err, "compact_revision", resp.CompactRevision)
				break
			}
			c.cache.events(resp.Events, resp.Header.Revision)
			delivered, backoff = true, first
		}
		cancel()
		// A watch that failed at once waits before the reload, so a
		// failure that repeats does not spin.
		if !delivered && !sleep(ctx, backoff) {
			return
		}
		for {
			if ctx.Err() != nil {
				return
			}
			err := c.load(ctx)
			if err == nil {
				break
			}
			c.log.Warn("control reload from etcd failed; serving cached data", "err", err, "retry_in", backoff)
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, most)
		}
	}
}

// sleep waits d, or less if ctx ends (then it returns false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// etcdErr turns a failed etcd request into the error the caller gets:
// unavailable, naming etcd, unless the caller itself gave up.
func etcdErr(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
	var me *memory.Error
	if errors.As(err, &me) {
		return err
	}
	return &memory.Error{
		Code:    memory.CodeUnavailable,
		Message: what + ": etcd, which holds the cluster's projects and keys, did not answer; try again shortly",
		Err:     fmt.Errorf("%s: %w", what, err),
	}
}

// miss runs one cache-miss lookup in etcd, at most maxMisses at a time.
func (c *Control) miss(ctx context.Context, key string) (*clientv3.GetResponse, error) {
	resp, err := c.missTxn(ctx, clientv3.OpGet(key))
	if err != nil {
		return nil, err
	}
	return (*clientv3.GetResponse)(resp.Responses[0].GetResponseRange()), nil
}

// missTxn runs reads for a cache miss in one linearizable transaction (one
// round trip), at most maxMisses at a time.
func (c *Control) missTxn(ctx context.Context, gets ...clientv3.Op) (*clientv3.TxnResponse, error) {
	select {
	case c.misses <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.misses }()
	c.etcdGets.Add(1)
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	return c.cli.Txn(ctx).Then(gets...).Commit()
}
