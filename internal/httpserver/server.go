// Package httpserver is Munin's HTTP front door: it routes /mcp, /api/v1 and
// /healthz and puts every request through the same hardening — panic
// recovery, request log, Origin/Host check, body cap and bearer auth — so
// the handlers behind it only ever see authenticated, bounded requests.
package httpserver

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"

	"munin/internal/oauth"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"munin/internal/api"
	"munin/internal/memory"
	"munin/internal/metrics"
	"munin/internal/service"
)

// Defaults applied by New to a zero Config.
const (
	DefaultAddr         = "127.0.0.1:8080"
	DefaultMaxBodyBytes = 1 << 20
)

// Server timeouts. There is deliberately no long-running-request exception in
// these numbers: GET /mcp (the SSE stream of MCP Streamable HTTP) lifts its
// own write deadline per request, see streaming.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 60 * time.Second
	// writeTimeout bounds every ordinary response, so a client that stops
	// reading cannot pin a handler forever. A server-wide WriteTimeout would
	// kill SSE streams after a minute; http.ResponseController lets the
	// stream route clear it for itself, which keeps the safe default for
	// everything else (and for routes added later, like the web UI).
	writeTimeout   = 60 * time.Second
	idleTimeout    = 120 * time.Second
	maxHeaderBytes = 64 << 10
)

// Config configures the HTTP server. The zero value serves on DefaultAddr.
type Config struct {
	// Addr is the listen address (default "127.0.0.1:8080").
	Addr string
	// AllowedOrigins are browser origins ("https://munin.example.com")
	// accepted besides the server's own host and loopback origins.
	AllowedOrigins []string
	// MaxBodyBytes caps a request body (default 1 MiB); larger bodies get 413.
	MaxBodyBytes int64
	// Logger receives the request log and recovered panics; nil means slog.Default().
	Logger *slog.Logger
	// MaxInFlight limits requests served at once (default
	// DefaultMaxInFlight; negative: no limit); the excess gets 429.
	MaxInFlight int
	// MaxInFlightPerKey limits one key's requests served at once (default
	// DefaultMaxInFlightPerKey; negative: no limit); the excess gets 429.
	MaxInFlightPerKey int
	// RatePerKey limits one key's requests per second, with a burst of
	// twice that (default DefaultRatePerKey; negative: no limit).
	RatePerKey float64
	// RefusalHold is how long a refusal of a key over its limits is held
	// back (default DefaultRefusalHold; negative: sent at once).
	RefusalHold time.Duration
	// KeyLimits, when set, are the limits per key, shared with the web UI;
	// nil: made from the three fields above.
	KeyLimits *KeyLimits
	// Metrics, when set, is served at /metrics (server-admin key) and fed with
	// request counts, in-flight requests and overload rejections.
	Metrics *metrics.Metrics
	// Web, when set, answers every path the routes above do not (the web
	// UI at "/"). It does its own authentication with session cookies; the
	// recovery, request log, Origin/Host check and body cap still apply.
	Web http.Handler
	// Internal, when set, serves the calls of the other nodes of a cluster
	// under InternalPrefix. It authenticates them itself (the cluster
	// secret), so no key is asked for; admission, the request log and the
	// body cap still apply.
	Internal       http.Handler
	InternalPrefix string
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client (ParseTrustedProxies); none: the peer is the client.
	TrustedProxies []netip.Prefix
	// OAuth, when set, is the server's OAuth sign-in (oauth.go): /mcp and
	// /api/v1 also take access tokens, their 401s name the resource
	// metadata, the discovery documents are served, and OAuthEndpoints
	// answers the token and registration endpoints. Nil: keys only, and
	// nothing is advertised.
	OAuth          *oauth.Config
	OAuthEndpoints http.Handler
}

func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.MaxInFlightPerKey == 0 {
		c.MaxInFlightPerKey = DefaultMaxInFlightPerKey
	}
	if c.RatePerKey == 0 {
		c.RatePerKey = DefaultRatePerKey
	}
	if c.RefusalHold == 0 {
		c.RefusalHold = DefaultRefusalHold
	}
	return c
}

// New builds the HTTP server: mcp is mounted at /mcp and apiHandler under
// /api/v1 (both behind bearer auth), /healthz answers "ok" without auth.
// Start it with ListenAndServe or Serve; Shutdown also ends open MCP streams
// so that draining does not wait for clients that never hang up.
func New(cfg Config, svc *service.Service, mcp http.Handler, apiHandler http.Handler) *http.Server {
	cfg = cfg.withDefaults()
	streams := newStreamCloser()
	ready := &readiness{svc: svc}
	srv := &http.Server{
		Addr:              cfg.Addr,
		Handler:           newHandler(cfg, svc, mcp, apiHandler, streams, ready),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(streams.closeAll)
	srv.RegisterOnShutdown(func() { ready.draining.Store(true) })
	return srv
}

// newHandler assembles routes and middleware, outermost first:
// recover → log → anonymous admission → origin → body cap → change streams
// end on shutdown → (route) → auth
// → admission (key, project, server) → body buffer → handler.
func newHandler(cfg Config, svc *service.Service, mcp, apiHandler http.Handler, streams *streamCloser, ready *readiness) http.Handler {
	r := mux.NewRouter()
	// Paths reach the handlers as sent: a slug with ".." must be refused by
	// validation, not cleaned into another path and redirected.
	r.SkipClean(true)
	r.NotFoundHandler = http.HandlerFunc(notFound)

	perKey := cfg.KeyLimits
	if perKey == nil || perKey.l == nil {
		perKey = NewKeyLimits(cfg)
	}
	authed := func(path string, refuse refuseFunc, h http.Handler) http.Handler {
		return requireCaller(svc, bearerAuth{oauth: cfg.OAuth, path: path}, perKey.Limit(bufferBody(refuse, h)))
	}
	// CORS sits outside the method and key checks: a preflight is an
	// OPTIONS request without a key, answered before either.
	cors := crossOrigin(newOriginPolicy(cfg.AllowedOrigins))
	// allowMethods, not Methods: a wrong method must get 405, not fall
	// through to the web UI's catch-all and its 404 page.
	r.Handle("/healthz", allowMethods(http.HandlerFunc(healthz), http.MethodGet, http.MethodHead))
	r.Handle("/readyz", allowMethods(ready, http.MethodGet, http.MethodHead))
	if cfg.Metrics != nil {
		r.Handle("/metrics", allowMethods(requireKey(svc, requireServerAdmin(cfg.Metrics.Handler())), http.MethodGet, http.MethodHead))
	}
	r.Handle("/mcp", cors(allowMethods(authed("/mcp", refuseRPC, streaming(streams, mcp)), http.MethodGet, http.MethodPost, http.MethodDelete)))
	r.PathPrefix(api.Prefix + "/").Handler(cors(authed(api.Prefix, refuseREST, holdHandlerRefusals(perKey.l, apiHandler))))
	if cfg.OAuth != nil {
		mountOAuth(r, cfg, func(h http.Handler) http.Handler {
			return requireKey(svc, perKey.Limit(bufferBody(refuseRPC, h)))
		}, streaming(streams, mcp), cors)
	}
	if cfg.Internal != nil {
		r.PathPrefix(cfg.InternalPrefix).Handler(admitInternal(perKey.l, cfg.Internal))
	}
	if cfg.Web != nil {
		r.PathPrefix("/").Handler(cfg.Web)
	} else {
		r.Handle("/", http.HandlerFunc(root)).Methods(http.MethodGet, http.MethodHead)
	}

	var h http.Handler = r
	h = endChangeStreams(streams, h)
	h = limitBody(cfg.MaxBodyBytes, h)
	h = checkOrigin(newOriginPolicy(cfg.AllowedOrigins), cfg.OAuth != nil, h)
	h = admitAnonymous(perKey.l, cfg.Metrics, h)
	h = logRequests(cfg.Logger, cfg.Metrics, h)
	h = recoverPanics(cfg.Logger, h)
	h = trustProxies(cfg.TrustedProxies, h)
	return h
}

func healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte("ok\n"))
}

// root answers "/" until the web UI takes it over.
func root(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("Munin is running; MCP clients connect to /mcp, scripts use /api/v1.\n"))
}

// allowMethods answers 405 with Allow for any other method. It is a wrapper
// rather than a route matcher because the web UI's catch-all route would
// otherwise take the request and answer 404.
func allowMethods(next http.Handler, methods ...string) http.Handler {
	allow := strings.Join(methods, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !slices.Contains(methods, r.Method) {
			w.Header().Set("Allow", allow)
			api.WriteErrorStatus(w, http.StatusMethodNotAllowed, memory.CodeInvalid, fmt.Sprintf("method %s is not allowed on %s; use %s", r.Method, r.URL.Path, allow))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func notFound(w http.ResponseWriter, r *http.Request) {
	api.WriteError(w, memory.Errorf(memory.CodeNotFound, "no route %s %s", r.Method, r.URL.Path))
}
