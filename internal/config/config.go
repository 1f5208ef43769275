// Package config is every setting of a Munin server in one place: the
// sectioned Config, and beside each section's fields the declaration of
// each setting — its flag, its environment variable and its help text —
// from which the command line's flags, its environment, `munin COMMAND
// --help` and docs/configuration.md are all derived.
//
// Defaults are not declared here. Each one is owned by the package whose
// zero Options needs it (search.DefaultIndexWait, mcpserver.DefaultMaxSessions,
// …; tests build those Options directly), and app.DefaultConfig fills a
// Config from them: config stays a leaf that imports no other Munin package,
// and no default is written down twice. A zero field means "the package's
// default" to app.Open, so a Config built in a test needs only what it changes.
package config

import "time"

// Config is everything a Munin server can be told, by section.
type Config struct {
	Server     Server
	Storage    Storage
	Search     Search
	Limits     Limits
	Embeddings Embeddings
	Cluster    Cluster
}

// Server is the HTTP front door.
type Server struct {
	// Addr is the listen address.
	Addr string
	// AllowedOrigins are Origin values accepted besides the server's own.
	AllowedOrigins []string
	// TrustedProxies are reverse proxies (addresses or prefixes) whose
	// X-Forwarded-For names the client.
	TrustedProxies []string
	// PublicURL is the https origin clients reach the server at (behind a
	// TLS reverse proxy); setting it switches OAuth sign-in on.
	PublicURL string
	// OAuthClients is a JSON file of pre-registered OAuth clients.
	OAuthClients string
}

func (s *Server) settings() []Setting {
	return []Setting{
		{Flag: "addr", Env: "MUNIN_ADDR", field: &s.Addr,
			Help: "listen address"},
		{Flag: "allowed-origins", Env: "MUNIN_ALLOWED_ORIGINS", field: (*list)(&s.AllowedOrigins),
			Help: "comma-separated extra allowed `origins` (scheme://host[:port])"},
		{Flag: "trusted-proxies", Env: "MUNIN_TRUSTED_PROXIES", field: (*list)(&s.TrustedProxies),
			Help: "comma-separated `addresses` or prefixes of reverse proxies whose X-Forwarded-For names the client (none: the peer is the client)"},
		{Flag: "public-url", Env: "MUNIN_PUBLIC_URL", field: &s.PublicURL,
			Help: "the https `origin` clients reach this server at, e.g. https://munin.example.com behind a TLS reverse proxy; switches OAuth sign-in on for claude.ai, ChatGPT and other OAuth clients (empty: keys only)"},
		{Flag: "oauth-clients", Env: "MUNIN_OAUTH_CLIENTS", field: &s.OAuthClients,
			Help: "a JSON `file` of pre-registered OAuth clients, [{\"client_id\", \"client_name\", \"redirect_uris\": [...]}] (public clients; needs --public-url; a client removed from the file loses its sign-ins at the next start)"},
	}
}

// DefaultDataDir is the data directory when none is given. It is the one
// default config owns: no package below needs one for a zero Options.
const DefaultDataDir = "./data"

// Storage is the data directory and how SQLite writes it.
type Storage struct {
	// DataDir is the data directory: the control file and one file per workspace.
	DataDir string
	// Synchronous is SQLite's synchronous mode: "NORMAL" or "FULL".
	Synchronous string
	// LatestCacheBytes bounds the cache of latest versions kept above
	// SQLite for recall's hits and get (0: off).
	LatestCacheBytes int
}

func (s *Storage) settings() []Setting {
	return []Setting{
		{Flag: "data", Env: "MUNIN_DATA", field: &s.DataDir,
			Help: "data directory"},
		{Flag: "synchronous", Env: "MUNIN_SYNCHRONOUS", field: &s.Synchronous,
			Help: "SQLite synchronous mode, NORMAL or FULL"},
		{Flag: "latest-cache-bytes", Env: "MUNIN_LATEST_CACHE_BYTES", field: &s.LatestCacheBytes,
			Help: "bytes of entries' latest versions cached above SQLite for recall and get, all workspaces together; 0 turns the cache off"},
	}
}

// Search is recall and its indexes, and the search log.
type Search struct {
	// IndexWait bounds a recall's wait for queued index refreshes and its
	// project's index build.
	IndexWait time.Duration
	// IndexIdle is how long a project's search index may go unused before
	// it is closed.
	IndexIdle time.Duration
	// IndexMaxOpen caps the project indexes open at once; past it the
	// least recently used are closed (0: the default, -1: no cap).
	IndexMaxOpen int
	// RecallExact switches recall's compound and typo tiers off: only the
	// words as written (and their forms) are searched.
	RecallExact bool
	// SearchLogOff stops writing the search log.
	SearchLogOff bool
	// SimilarOff switches remember's duplicate hint off.
	SimilarOff bool
	// SearchLogDays and SearchLogRows are the search log's retention: days
	// kept and newest rows kept per project (0: the default, -1: no limit).
	SearchLogDays, SearchLogRows int
}

func (s *Search) settings() []Setting {
	return []Setting{
		{Flag: "index-wait", Env: "MUNIN_INDEX_WAIT", field: &s.IndexWait,
			Help: "longest a recall waits for queued index refreshes or a build before it answers unavailable"},
		{Flag: "index-idle", Env: "MUNIN_INDEX_IDLE", field: &s.IndexIdle,
			Help: "a project's search index unused this long is closed, and opened again on its next recall"},
		{Flag: "index-max-open", Env: "MUNIN_INDEX_MAX_OPEN", field: &s.IndexMaxOpen, Note: "-1: no cap",
			Help: "at most this many projects' search indexes are open at once; past it the least recently used is closed, and opened again on its next recall"},
		{Flag: "recall-exact", Env: "MUNIN_RECALL_EXACT", field: &s.RecallExact,
			Help: "recall searches the words as written only: no compound or typo tiers"},
		{Flag: "search-log-off", Env: "MUNIN_SEARCH_LOG_OFF", field: &s.SearchLogOff,
			Help: "do not write the search log"},
		{Flag: "similar-off", Env: "MUNIN_SIMILAR_OFF", field: &s.SimilarOff,
			Help: "remember looks for no similar entries (the duplicate hint costs a new slug's remember a keyword search)"},
		{Flag: "search-log-days", Env: "MUNIN_SEARCH_LOG_DAYS", field: &s.SearchLogDays, Note: "-1: forever",
			Help: "keep search-log rows this many days"},
		{Flag: "search-log-rows", Env: "MUNIN_SEARCH_LOG_ROWS", field: &s.SearchLogRows, Note: "-1: no limit",
			Help: "keep this many newest search-log rows per project"},
	}
}

// Limits bound what callers may do: the write budget, content size,
// requests, recalls and MCP sessions. A zero field is the owning package's
// default; where a negative value means "no limit", the help says so.
type Limits struct {
	// BudgetOff switches the write budget off for the whole server.
	BudgetOff bool
	// WriteBudget is the default writes per project per hour.
	WriteBudget int
	// WriteBudgetBytes is the default content bytes per project per hour.
	WriteBudgetBytes int
	// MaxContent is the largest entry content in bytes.
	MaxContent int
	// MaxInFlight limits keyed requests served at once; the excess gets 429.
	MaxInFlight int
	// MaxInFlightPerKey limits one key's requests served at once.
	MaxInFlightPerKey int
	// RatePerKey limits one key's requests per second.
	RatePerKey float64
	// RecallRate and RecallBurst bound each key's recalls per second;
	// RecallConcurrency its recalls at once.
	RecallRate        float64
	RecallBurst       int
	RecallConcurrency int
	// SessionIdleTTL ends MCP sessions unused for this long.
	SessionIdleTTL time.Duration
	// MaxSessions, MaxSessionsPerKey and MaxStreamsPerKey bound live MCP
	// sessions in total and per key, and open GET streams per key.
	MaxSessions, MaxSessionsPerKey, MaxStreamsPerKey int
	// SessionOpenRate bounds the MCP sessions one project opens per second
	// (negative: no bound). It has no flag: only a server started in-process
	// (the load test) changes it.
	SessionOpenRate float64
}

func (l *Limits) settings() []Setting {
	return []Setting{
		{Flag: "write-budget", Env: "MUNIN_WRITE_BUDGET", field: &l.WriteBudget,
			Help: "default writes per project per hour"},
		{Flag: "write-budget-bytes", Env: "MUNIN_WRITE_BUDGET_BYTES", field: &l.WriteBudgetBytes,
			Help: "default content bytes per project per hour"},
		{Flag: "budget-off", Env: "MUNIN_BUDGET_OFF", field: &l.BudgetOff,
			Help: "switch the write budget off for the whole server"},
		{Flag: "max-content", Env: "MUNIN_MAX_CONTENT", field: &l.MaxContent,
			Help: "largest entry content in bytes"},
		{Flag: "max-inflight", Env: "MUNIN_MAX_INFLIGHT", field: &l.MaxInFlight, Note: "-1: no limit",
			Help: "keyed requests served at once, at most half of them one project's; the excess gets 429"},
		{Flag: "max-inflight-per-key", Env: "MUNIN_MAX_INFLIGHT_PER_KEY", field: &l.MaxInFlightPerKey, Note: "-1: no limit",
			Help: "requests of one key served at once; the excess gets 429"},
		{Flag: "rate-per-key", Env: "MUNIN_RATE_PER_KEY", field: &l.RatePerKey, Note: "-1: no limit",
			Help: "requests per second of one key, bursts of twice that; the excess gets 429"},
		{Flag: "recall-rate", Env: "MUNIN_RECALL_RATE", field: &l.RecallRate, Note: "-1: no limit",
			Help: "recalls per second one key may make, 5× this one project"},
		{Flag: "recall-burst", Env: "MUNIN_RECALL_BURST", field: &l.RecallBurst,
			Help: "recalls one key may make at once above its rate"},
		{Flag: "recall-concurrency", Env: "MUNIN_RECALL_CONCURRENCY", field: &l.RecallConcurrency, Note: "-1: no limit",
			Help: "recalls of one key running at once, more are refused; a project runs half the cores' worth"},
		{Flag: "session-idle-ttl", Env: "MUNIN_SESSION_IDLE_TTL", field: &l.SessionIdleTTL,
			Help: "end MCP sessions unused for this long"},
		{Flag: "max-sessions", Env: "MUNIN_MAX_SESSIONS", field: &l.MaxSessions,
			Help: "live MCP sessions in total, at most 1/8 of them one project's; past it initialize gets 429"},
		{Flag: "max-sessions-per-key", Env: "MUNIN_MAX_SESSIONS_PER_KEY", field: &l.MaxSessionsPerKey,
			Help: "live MCP sessions per key; one more ends the key's least recently used"},
		{Flag: "max-streams-per-key", Env: "MUNIN_MAX_STREAMS_PER_KEY", field: &l.MaxStreamsPerKey,
			Help: "open MCP streams per key (GET /mcp and subscriptions/listen together), 4× this per project; the excess gets 429"},
	}
}

// Embeddings name an OpenAI-compatible embedding endpoint for meaning
// search. With URL empty (the default) nothing is embedded and nothing is
// called.
type Embeddings struct {
	// URL is the endpoint, Model its model.
	URL, Model string
	// Key is the endpoint's bearer token, from the environment only.
	Key string
	// SimilarMin is the least cosine similarity of remember's duplicate
	// hint by meaning.
	SimilarMin float64
}

func (e *Embeddings) settings() []Setting {
	return []Setting{
		{Flag: "embed-url", Env: "MUNIN_EMBED_URL", field: &e.URL, Note: "empty: off, nothing is called",
			Help: "OpenAI-compatible embedding endpoint for meaning search, e.g. http://127.0.0.1:11434"},
		{Flag: "embed-model", Env: "MUNIN_EMBED_MODEL", field: &e.Model,
			Help: "embedding model, e.g. nomic-embed-text"},
		{Flag: "embed-key", Env: "MUNIN_EMBED_KEY", field: &e.Key, Secret: true, Anchor: "embed-url",
			Help: "bearer token"},
		{Flag: "embed-similar-min", Env: "MUNIN_EMBED_SIMILAR_MIN", field: &e.SimilarMin, Note: "0: off; else 0 < value ≤ 1",
			Help: "least cosine similarity for remember's hint of a similar entry by meaning; the scale depends on the model, so measure yours first (docs/trusted-memory.md)"},
	}
}

// Cluster makes the server one node of a cluster (docs: "Running a
// cluster"). The zero value is a single server.
type Cluster struct {
	Enabled bool
	// Etcd are the etcd endpoints; Prefix the cluster's key prefix.
	Etcd   []string
	Prefix string
	// Advertise is this node's base URL as the other nodes reach it.
	Advertise string
	// Replica is where workspace files stream to: file:///dir or s3://bucket/path.
	Replica string
	// LeaseTTL bounds how long a dead node holds its workspaces.
	LeaseTTL time.Duration
	// Async acknowledges writes before the replica holds them (loss bound:
	// the sync interval); LagMax is the replication lag past which writes
	// are refused.
	Async  bool
	LagMax time.Duration
	// Litestream is the litestream binary ("": found on PATH or in GOPATH/bin).
	Litestream string
	// Secret authenticates the nodes' calls to each other; every node has
	// the same. From the environment only.
	Secret string
}

func (c *Cluster) settings() []Setting {
	return []Setting{
		{Flag: "cluster", Env: "MUNIN_CLUSTER", field: &c.Enabled,
			Help: "run as one node of a cluster: ownership in etcd, workspace files streamed to --replica"},
		{Flag: "etcd", Env: "MUNIN_ETCD", field: (*list)(&c.Etcd),
			Help: "comma-separated etcd `endpoints` of the cluster, e.g. http://10.0.0.1:2379"},
		{Flag: "etcd-prefix", Env: "MUNIN_ETCD_PREFIX", field: &c.Prefix,
			Help: "etcd key prefix of the cluster"},
		{Flag: "advertise", Env: "MUNIN_ADVERTISE", field: &c.Advertise,
			Help: "this node's base URL as the other nodes reach it, e.g. http://10.0.0.5:8080"},
		{Flag: "cluster-secret", Env: "MUNIN_CLUSTER_SECRET", field: &c.Secret, Secret: true, Anchor: "advertise",
			Note: "at least 16 characters, the same on every node", Help: "cluster secret"},
		{Flag: "replica", Env: "MUNIN_REPLICA", field: &c.Replica,
			Help: "where workspace files stream to: file:///dir or s3://bucket/path"},
		{Flag: "lease-ttl", Env: "MUNIN_LEASE_TTL", field: &c.LeaseTTL,
			Help: "how long a dead node holds its workspaces; a paused one stops writing before it runs out"},
		{Flag: "replication", Env: "MUNIN_REPLICATION", field: (*replication)(&c.Async),
			Help: "replication `mode`: sync, a write is acknowledged once the replica holds it; async, at once, the replica follows within a second"},
		{Flag: "replica-lag-max", Env: "MUNIN_REPLICA_LAG_MAX", field: &c.LagMax,
			Help: "async: past this replication lag writes answer unavailable"},
		{Flag: "litestream", Env: "MUNIN_LITESTREAM", field: &c.Litestream, Note: "empty: litestream on PATH or in GOPATH/bin",
			Help: "the litestream binary"},
	}
}
