package app

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"munin/internal/clientmeta"
	"munin/internal/cluster"
	"munin/internal/config"
	"munin/internal/httpserver"
	"munin/internal/mcpserver"
	"munin/internal/memory"
	"munin/internal/owner"
	"munin/internal/search"
	"munin/internal/service"
	"munin/internal/store"
)

// Config is what Open needs: the settings (internal/config) and what the
// process that opens the data directory adds to them. A zero setting is
// its package's default (DefaultConfig lists them).
type Config struct {
	config.Config
	// Exclusive claims the data directory for this process (store.LockDir):
	// serving and importing need it, read-only commands do not.
	Exclusive bool
	Logger    *slog.Logger
	// OnVectorsStored, when set, is told every batch of vectors the
	// embedding worker stored (besides the search index, which always is).
	OnVectorsStored func([]memory.Vector)
	// ClientMetadata adjusts the fetcher of OAuth client metadata
	// documents. Tests only: no flag sets it, so a server never fetches
	// from loopback or private addresses (AllowPrefixes) or trusts another
	// certificate authority (RootCAs).
	ClientMetadata clientmeta.Options
	// IndexPersistNap is how long each search index keeps new segments in
	// memory before it writes them (search.Options.PersistNap; zero: its
	// default). Tests only: closing an index waits until it is on disk, up
	// to a nap, and a test server closes many.
	IndexPersistNap time.Duration

	// staticClients are the clients of --oauth-clients, read by Open.
	staticClients []memory.OAuthClient
}

// DefaultConfig is every setting at its default: what `munin serve`
// starts with before its flags and environment, what --help and
// docs/configuration.md show. Each default is owned by the package whose
// zero Options needs it and named here, never written down a second time
// (benbjohnson/wtf's cmd/wtfd is the model: the package that wires
// everything is the one that knows every default).
func DefaultConfig() config.Config {
	var c config.Config
	c.Server.Addr = httpserver.DefaultAddr

	c.Storage.DataDir = config.DefaultDataDir
	c.Storage.Synchronous = store.DefaultSynchronous
	c.Storage.LatestCacheBytes = store.DefaultLatestCacheBytes

	c.Search.IndexWait = search.DefaultIndexWait
	c.Search.IndexIdle = search.DefaultIdleClose
	c.Search.IndexMaxOpen = search.DefaultMaxOpen
	c.Search.SearchLogDays = service.DefaultSearchLogDays
	c.Search.SearchLogRows = service.DefaultSearchLogRows

	c.Limits.WriteBudget = memory.DefaultWriteBudget
	c.Limits.WriteBudgetBytes = memory.DefaultWriteBudgetBytes
	c.Limits.MaxContent = memory.DefaultMaxContent
	c.Limits.MaxInFlight = httpserver.DefaultMaxInFlight
	c.Limits.MaxInFlightPerKey = httpserver.DefaultMaxInFlightPerKey
	c.Limits.RatePerKey = httpserver.DefaultRatePerKey
	c.Limits.RecallRate = service.DefaultRecallRate
	c.Limits.RecallBurst = service.DefaultRecallBurst
	c.Limits.RecallConcurrency = service.DefaultRecallConcurrency
	c.Limits.SessionIdleTTL = mcpserver.DefaultSessionIdleTTL
	c.Limits.MaxSessions = mcpserver.DefaultMaxSessions
	c.Limits.MaxSessionsPerKey = mcpserver.DefaultMaxSessionsPerKey
	c.Limits.MaxStreamsPerKey = mcpserver.DefaultMaxStreamsPerKey
	c.Limits.SessionOpenRate = mcpserver.DefaultSessionOpenRate

	c.Cluster.Prefix = cluster.DefaultPrefix
	c.Cluster.LeaseTTL = cluster.DefaultLeaseTTL
	c.Cluster.LagMax = owner.DefaultLagMax
	return c
}

// maxContentLimit leaves room in the capped request body for the JSON
// around the content, so that an entry of --max-content bytes can be sent.
const maxContentLimit = httpserver.DefaultMaxBodyBytes - 64<<10

// check refuses settings that cannot work, instead of quietly using others.
func (c Config) check() error {
	l := c.Limits
	switch {
	case l.WriteBudget < 0:
		return fmt.Errorf("write budget must be 0 (the default) or more, got %d", l.WriteBudget)
	case l.WriteBudgetBytes < 0:
		return fmt.Errorf("write budget must be 0 bytes (the default) or more, got %d", l.WriteBudgetBytes)
	case c.Search.IndexWait < 0:
		return fmt.Errorf("index wait must not be negative, got %s", c.Search.IndexWait)
	case c.Search.IndexIdle < 0:
		return fmt.Errorf("index idle time must be positive, got %s", c.Search.IndexIdle)
	case c.Search.IndexMaxOpen < -1:
		return fmt.Errorf("index max open must be -1 (no cap), 0 (the default, %d) or more, got %d", search.DefaultMaxOpen, c.Search.IndexMaxOpen)
	case l.MaxContent < 0:
		return fmt.Errorf("max content must be 0 (the default) or more bytes, got %d", l.MaxContent)
	case l.MaxContent > maxContentLimit:
		return fmt.Errorf("max content %d bytes does not fit the %d-byte request body limit; at most %d", l.MaxContent, httpserver.DefaultMaxBodyBytes, maxContentLimit)
	case l.SessionIdleTTL < 0:
		return fmt.Errorf("session idle TTL must not be negative, got %s", l.SessionIdleTTL)
	case l.MaxSessions < 0:
		return fmt.Errorf("max sessions must be 0 (the default, %d) or more, got %d", mcpserver.DefaultMaxSessions, l.MaxSessions)
	case l.MaxSessionsPerKey < 0:
		return fmt.Errorf("max sessions per key must be 0 (the default, %d) or more, got %d", mcpserver.DefaultMaxSessionsPerKey, l.MaxSessionsPerKey)
	case l.MaxStreamsPerKey < 0:
		return fmt.Errorf("max streams per key must be 0 (the default, %d) or more, got %d", mcpserver.DefaultMaxStreamsPerKey, l.MaxStreamsPerKey)
	}
	if m := c.Embeddings.SimilarMin; m < 0 || m > 1 {
		return fmt.Errorf("--embed-similar-min must be 0 (off) or a cosine similarity above 0 and at most 1, got %v", m)
	}
	if c.Cluster.Enabled && c.Embeddings.URL != "" {
		return errors.New("cluster: meaning search (--embed-url) is not available in cluster mode yet")
	}
	if err := checkCluster(c.Cluster); err != nil {
		return err
	}
	if c.Cluster.Enabled && c.Cluster.LeaseTTL < cluster.MinLeaseTTL {
		return fmt.Errorf("--lease-ttl must be at least %s, got %s", cluster.MinLeaseTTL, c.Cluster.LeaseTTL)
	}
	return c.checkRecallLimits()
}

// checkRecallLimits refuses recall and search-log limits that mean nothing.
func (c Config) checkRecallLimits() error {
	l := c.Limits
	switch {
	case c.Search.SearchLogDays < -1:
		return fmt.Errorf("search log days must be -1 (keep forever), 0 (the default) or more, got %d", c.Search.SearchLogDays)
	case c.Search.SearchLogRows < -1:
		return fmt.Errorf("search log rows must be -1 (no limit), 0 (the default) or more, got %d", c.Search.SearchLogRows)
	case math.IsNaN(l.RatePerKey) || math.IsInf(l.RatePerKey, 0):
		return fmt.Errorf("requests per second per key must be a number, got %g", l.RatePerKey)
	case math.IsNaN(l.RecallRate) || math.IsInf(l.RecallRate, 0) || (l.RecallRate < 0 && l.RecallRate != -1):
		return fmt.Errorf("recall rate must be -1 (no limit), 0 (the default) or more recalls per second, got %g", l.RecallRate)
	case l.RecallBurst < 0:
		return fmt.Errorf("recall burst must be 0 (the default) or more, got %d", l.RecallBurst)
	case l.RecallConcurrency < -1:
		return fmt.Errorf("recall concurrency must be -1 (no limit), 0 (the default) or more, got %d", l.RecallConcurrency)
	}
	return nil
}
