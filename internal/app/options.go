package app

import (
	"cmp"
	"context"
	"net/http"

	"munin/internal/changestream"
	"munin/internal/config"
	"munin/internal/embed"
	"munin/internal/httpserver"
	"munin/internal/mcpserver"
	"munin/internal/memory"
	"munin/internal/metrics"
	"munin/internal/oauth"
	"munin/internal/remote"
	"munin/internal/search"
	"munin/internal/service"
	"munin/internal/store"
	"munin/internal/web"
)

// This file is where the settings reach the packages, and the only place:
// each function maps the sections a package needs to its Options, adding
// what Open built for it (metrics, hooks). A zero setting stays zero, and
// the package applies its own default.

// storeOptions are the store's: how SQLite writes, how much it caches, and
// who observes batches.
func storeOptions(c Config, m *metrics.Metrics) store.Options {
	return store.Options{Synchronous: c.Storage.Synchronous, Logger: c.Logger, Observer: m,
		LatestCacheBytes: int64(c.Storage.LatestCacheBytes)}
}

// searchOptions are the search registry's: where indexes live, how long a
// recall waits, when an idle index closes, how many stay open, which tiers
// recall runs.
func searchOptions(c Config, m *metrics.Metrics, meaning search.MeaningOptions) search.Options {
	return search.Options{
		Dir:         search.IndexRoot(c.Storage.DataDir),
		IdleClose:   c.Search.IndexIdle,
		MaxOpen:     c.Search.IndexMaxOpen,
		IndexWait:   c.Search.IndexWait,
		NoCompounds: c.Search.RecallExact,
		NoTypos:     c.Search.RecallExact,
		Logger:      c.Logger,
		OnRefresh:   m.RefreshLag,
		Meaning:     meaning,
		PersistNap:  c.IndexPersistNap,
	}
}

// serviceOptions are the service's: the write budget, content size, the
// search log and the recall limits.
func serviceOptions(c Config, m *metrics.Metrics, backlog func(context.Context, memory.ProjectRef) (int, error)) service.Options {
	return service.Options{
		DefaultWriteBudget:      c.Limits.WriteBudget,
		DefaultWriteBudgetBytes: c.Limits.WriteBudgetBytes,
		BudgetOff:               c.Limits.BudgetOff,
		MaxContent:              c.Limits.MaxContent,
		SearchLogOff:            c.Search.SearchLogOff,
		SimilarOff:              c.Search.SimilarOff,
		SearchLogDays:           c.Search.SearchLogDays,
		SearchLogRows:           c.Search.SearchLogRows,
		RecallRate:              c.Limits.RecallRate,
		RecallBurst:             c.Limits.RecallBurst,
		RecallConcurrency:       c.Limits.RecallConcurrency,
		Logger:                  c.Logger,
		OnBudgetRejected:        m.BudgetRejected,
		EmbedBacklog:            backlog,
	}
}

// mcpOptions are the MCP server's: the session limits.
func mcpOptions(c Config, m *metrics.Metrics) mcpserver.Options {
	return mcpserver.Options{
		Logger:            c.Logger,
		Metrics:           m,
		SessionIdleTTL:    c.Limits.SessionIdleTTL,
		MaxSessions:       c.Limits.MaxSessions,
		MaxSessionsPerKey: c.Limits.MaxSessionsPerKey,
		MaxStreamsPerKey:  c.Limits.MaxStreamsPerKey,
		// mcpserver reads a zero rate as "no bound", so the default is applied here.
		SessionOpenRate: cmp.Or(c.Limits.SessionOpenRate, mcpserver.DefaultSessionOpenRate),
	}
}

// admission is the front door's admission limits, shared by REST, MCP and
// the web UI's sessions (httpserver.NewKeyLimits) and completed by
// httpConfig for the server itself.
func admission(c Config) httpserver.Config {
	return httpserver.Config{
		MaxInFlight:       c.Limits.MaxInFlight,
		MaxInFlightPerKey: c.Limits.MaxInFlightPerKey,
		RatePerKey:        c.Limits.RatePerKey,
	}
}

// httpConfig is the HTTP server's: the admission limits, where it listens,
// which origins it accepts, and the handlers Open built.
func (a *App) httpConfig() httpserver.Config {
	hc := admission(a.cfg)
	hc.Addr = a.cfg.Server.Addr
	hc.AllowedOrigins = a.cfg.Server.AllowedOrigins
	hc.TrustedProxies, _ = httpserver.ParseTrustedProxies(a.cfg.Server.TrustedProxies) // checked in Open
	if hc.OAuth = a.oauthConfig(); hc.OAuth != nil {
		hc.OAuthEndpoints = oauth.Endpoints(*hc.OAuth, a.Svc, a.log)
	}
	hc.Logger = a.log
	hc.Web = a.Web
	hc.KeyLimits = a.perKey
	hc.Metrics = a.Metrics
	hc.Internal, hc.InternalPrefix = a.internal, remote.PathPrefix
	return hc
}

// webOptions are the web UI's: the origins its forms accept, the
// admission limits of its signed-in requests, the change streams it
// shares with REST, and the OAuth issuer its authorize page names.
func webOptions(c Config, limitKey func(http.Handler) http.Handler, streams *changestream.Streams) web.Options {
	return web.Options{Logger: c.Logger, TrustedOrigins: c.Server.AllowedOrigins, LimitKey: limitKey, Streams: streams,
		Issuer: c.Server.PublicURL} // the OAuth issuer: empty while OAuth is off
}

// streamOptions are the change streams': a key's bound as for MCP's GET
// streams. A single server's streams wake on its commits alone; a cluster
// node's also read the feed now and then, for writes other nodes own.
func streamOptions(c Config, clustered bool) changestream.Options {
	o := changestream.Options{MaxPerKey: c.Limits.MaxStreamsPerKey}
	if !clustered {
		o.Poll = -1
	}
	return o
}

// NewEmbedClient is the client of the embedding endpoint e names (nil URL:
// an error). munin reindex --embeddings uses it as the server does.
func NewEmbedClient(e config.Embeddings) (*embed.Client, error) {
	return embed.NewClient(embed.ClientOptions{URL: e.URL, Model: e.Model, Key: e.Key})
}
