// Package app wires Munin together: store → search → service → transports.
// cli parses flags and environment into a Config (the settings of
// internal/config) and calls Open; tests and the load test
// start the very same server in-process.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"munin/internal/api"
	"munin/internal/changestream"
	"munin/internal/embed"
	"munin/internal/httpserver"
	"munin/internal/mcpserver"
	"munin/internal/memory"
	"munin/internal/metrics"
	"munin/internal/search"
	"munin/internal/service"
	"munin/internal/store"
	"munin/internal/web"
)

// App is an opened data directory with every layer built on it.
type App struct {
	cfg   Config
	log   *slog.Logger
	lock  *store.DirLock // nil unless cfg.Exclusive
	Store *store.Store
	Index *search.Registry
	Svc   *service.Service
	MCP   *mcpserver.Server
	// Metrics are served at /metrics to server-admin keys.
	Metrics *metrics.Metrics
	Web     *web.Handler
	perKey  *httpserver.KeyLimits // shared by the HTTP server and Web
	streams *changestream.Streams // the change streams of REST and Web
	// Embedder and Embed are the embedding client and worker; nil when
	// embeddings are off.
	Embedder *embed.Client
	Embed    *embed.Worker
	// cluster and internal are cluster mode's node and the handler of the
	// other nodes' calls; nil on a single server.
	cluster  *clusterNode
	internal http.Handler
}

// Open opens the data directory and builds the layers; nothing listens yet.
func Open(cfg Config) (*App, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := cfg.publicURL(); err != nil {
		return nil, err
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	// One normalized list for both the front door and the web UI's
	// cross-origin check, so they accept the same origins.
	origins, err := httpserver.NormalizeOrigins(cfg.Server.AllowedOrigins)
	if err != nil {
		return nil, err
	}
	cfg.Server.AllowedOrigins = origins
	if _, err := httpserver.ParseTrustedProxies(cfg.Server.TrustedProxies); err != nil {
		return nil, err
	}
	var lock *store.DirLock
	if cfg.Exclusive {
		if lock, err = store.LockDir(cfg.Storage.DataDir); err != nil {
			return nil, err
		}
	}
	m := metrics.New()
	sopts := storeOptions(cfg, m)
	var cn *clusterNode
	if cfg.Cluster.Enabled {
		ctx, cancel := context.WithTimeout(context.Background(), joinTimeout)
		cn, err = joinCluster(ctx, cfg)
		cancel()
		if err != nil {
			return nil, errors.Join(err, lock.Unlock())
		}
		sopts = cn.storeOptions(sopts)
	}
	st, err := store.Open(cfg.Storage.DataDir, sopts)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open data directory %s: %w", cfg.Storage.DataDir, err), cn.close(), lock.Unlock())
	}
	if err := configureOAuthClients(cfg, st); err != nil {
		return nil, errors.Join(err, st.Close(), cn.close(), lock.Unlock())
	}
	// The worker tells the registry each batch it stored, so a loaded
	// project's vectors follow; reg is set before the worker starts.
	var reg *search.Registry
	cfg.OnVectorsStored = chainStored(cfg.OnVectorsStored, func(vs []memory.Vector) { reg.OnStored(vs) })
	embedder, worker, err := openEmbedding(cfg, st)
	if err != nil {
		return nil, errors.Join(err, st.Close(), cn.close(), lock.Unlock())
	}
	// bleve's and zap's settings are per process; every command that opens
	// an index (serve, stdio, import, reindex, the in-process tests) comes
	// through here first.
	search.TuneProcess()
	reg = search.NewRegistry(st, searchOptions(cfg, m, meaningOptions(embedder, cfg.Embeddings, st, m)))
	var index service.Index = reg
	var backlog func(context.Context, memory.ProjectRef) (int, error)
	if worker != nil {
		index = notifyingIndex{Registry: reg, w: worker}
		backlog = embedBacklog(st, embedder.Model())
	}
	svcOpts := serviceOptions(cfg, m, backlog)
	if embedder != nil {
		svcOpts.EmbedHealth = func() (bool, string) { h := embedder.Health(); return h.Failing, h.Reason }
	}
	var svcStore service.Store = st
	var internal http.Handler
	if cn != nil {
		svcStore, index, internal = cn.wire(st, index, &svcOpts)
		registerClusterMetrics(m, cn)
		svcOpts.Ready = cn.ready
		// Watchers (MCP subscriptions) hear other nodes' writes by reading.
		svcOpts.FeedPoll = changestream.DefaultPoll
	}
	svcOpts.OAuth = oauthOptions(cfg, st)
	svc := service.New(svcStore, index, svcOpts)
	// One set of admission limits (key, project, server) for REST, MCP and
	// the web UI's sessions.
	perKey := httpserver.NewKeyLimits(admission(cfg))
	// One set of change streams for REST and the web UI, so that a key's
	// streams count together against --max-streams-per-key.
	streams := changestream.New(svc, streamOptions(cfg, cn != nil))
	ui, err := web.New(svc, webOptions(cfg, perKey.Limit, streams))
	if err != nil {
		if worker != nil {
			worker.Close()
		}
		return nil, errors.Join(fmt.Errorf("web UI: %w", err), svc.Close(), reg.Close(), st.Close(), cn.close(), lock.Unlock())
	}
	mcp := mcpserver.New(svc, mcpOptions(cfg, m))
	m.WriterQueue(func() int { return st.Stats().Queued })
	registerSessionCounters(m, mcp)
	registerSubscriptionCounters(m, mcp)
	registerKeyLimitCounters(m, perKey)
	if worker != nil {
		registerEmbedMetrics(m, worker)
		if err := worker.Start(context.Background()); err != nil {
			worker.Close()
			return nil, errors.Join(err, mcp.Close(context.Background()), svc.Close(), reg.Close(), st.Close(), cn.close(), lock.Unlock())
		}
		cfg.Logger.Info("embeddings on", "endpoint", embedder.Endpoint(), "model", embedder.Model())
	}
	a := &App{
		cfg:     cfg,
		log:     cfg.Logger,
		lock:    lock,
		Store:   st,
		Index:   reg,
		Svc:     svc,
		MCP:     mcp,
		Web:     ui,
		Metrics: m,
		perKey:  perKey,
		streams: streams,
	}
	a.Embedder, a.Embed = embedder, worker
	a.cluster, a.internal = cn, internal
	return a, nil
}

// Handler is the whole HTTP surface: /mcp, /api/v1, health and the web UI.
func (a *App) Handler() http.Handler {
	return a.httpServer().Handler
}

func (a *App) httpServer() *http.Server {
	return httpserver.New(a.httpConfig(), a.Svc, a.MCP.HTTPHandler(), api.NewWithStreams(a.Svc, a.streams))
}

// drainTimeout bounds how long shutdown waits for requests in flight.
const drainTimeout = 15 * time.Second

// Serve answers HTTP on ln until ctx is done, then drains requests in flight
// (up to drainTimeout) and returns. Close the App afterwards to flush and close files.
//
// A cluster node also stops when it loses its lease (a pause, a partition,
// etcd gone for longer than the TTL): it can never own anything again, so
// it drains and returns an error wrapping cluster.ErrLeaseLost, the process
// exits, and its supervisor starts it again as a new node.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	srv := a.httpServer()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var lost error
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	case <-a.cluster.lost():
		lost = fmt.Errorf("%w; stopped so that a supervisor starts it again as a new node", a.cluster.node.Err())
		a.log.Error("cluster lease lost: draining and stopping", "err", lost)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	if err != nil {
		err = fmt.Errorf("shutdown: requests still running after %s were cut off: %w", drainTimeout, err)
	}
	if serveErr := <-errc; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return errors.Join(lost, serveErr)
	}
	return errors.Join(lost, err)
}

// Close flushes the search log, stops the indexes and closes the databases,
// in the order the data flows; the data directory is released last.
func (a *App) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if a.Embed != nil {
		a.Embed.Close() // before the store: its writes go through the store's writer
	}
	// In a cluster the search log flushes to the owners before the node
	// hands its workspaces over; the store closes after that.
	return errors.Join(a.MCP.Close(ctx), a.Svc.Close(), a.Index.Close(), a.cluster.handOver(), a.Store.Close(), a.cluster.close(), a.lock.Unlock())
}

// joinTimeout bounds joining a cluster at start (etcd, replicator, control data).
const joinTimeout = 30 * time.Second
