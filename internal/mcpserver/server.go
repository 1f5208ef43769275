// Package mcpserver serves Munin's memory tools (remember, recall, get, list,
// history, forget, review, changes) over the Model Context Protocol, on Streamable HTTP at /mcp
// and on stdio. It is a thin transport: every call goes to the service with
// the caller's key, and every service error becomes a tool result with
// isError set and text "code: message".
package mcpserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"munin/internal/memory"
	"munin/internal/metrics"
	"munin/internal/service"
)

// Endpoint is the path the HTTP server mounts HTTPHandler at.
const Endpoint = "/mcp"

// instructions are sent once per session in the initialize answer, followed
// by the caller's projects (see reachNote). They describe once, for every
// tool that takes them, the arguments tools/list leaves undescribed
// (saidOnce, schemas.go); the limits come from memory's limits table.
var instructions = `Munin is memory shared by a team of agents. Entries are named by slugs like decisions/db-choice.
remember stores a new version (pass expected_version to avoid overwriting someone else's change); recall searches; get reads one entry; list and history browse; forget hides an entry (its history stays).
Start each session with changes: pass as since the next_cursor you kept from your last session ("now" the first time) to learn what was written in your projects meanwhile, and keep the next_cursor it answers for the next.
Where writes are reviewed (a propose key, or a project that reviews agents' writes), remember and forget answer state "pending" and a proposal id: only you see it until an admin approves it; review lists proposals, and admin keys approve or reject them there.
Entries are also MCP resources, munin://workspace/project/slug (a project's entry list: munin://workspace/project); subscribe to them to hear when they change.
Every tool but changes takes an optional project ("workspace/project"): without it, recall searches all your projects and the others act in your first one; changes always reads all of them.
` + fmt.Sprintf("as_of (RFC 3339) reads as it was then; cursor takes the next_cursor of the previous page; limit: recall 1-%d (default %d), list 1-%d (default %d), history 1-%d (default %d), changes 1-%d (default %d).\n",
	memory.MaxRecallLimit, memory.DefaultRecallLimit, memory.MaxListLimit, memory.DefaultListLimit,
	memory.MaxHistoryLimit, memory.DefaultHistoryLimit, memory.MaxChangesLimit, memory.DefaultChangesLimit) +
	`Errors start with a code: invalid, not_found, conflict, forbidden, unauthorized, budget_exhausted, too_large, unavailable.`

// reachNote names the projects the caller's keys reach, with role and the
// agent name recorded with its writes there: tools/list stays the same for
// everyone, the initialize answer is per session.
func reachNote(c memory.Caller) string {
	var b strings.Builder
	b.WriteString("\nYour projects (role, agent):")
	for i, k := range c.Keys() {
		fmt.Fprintf(&b, "\n- %s (%s, %s)", k.Project, k.Role, k.Agent)
		if i == 0 {
			b.WriteString(" — the default")
		}
	}
	return b.String()
}

// instructionsFor is the static text followed by the projects of the
// caller in ctx (the static text alone if there is none).
func instructionsFor(ctx context.Context) string {
	c, err := callerOf(ctx)
	if err != nil {
		return instructions
	}
	return instructions + reachNote(c)
}

// Options configure a Server. The zero value is usable.
type Options struct {
	// Version is reported to clients in the initialize answer ("dev" if empty).
	Version string
	// Logger receives internal errors; nil means slog.Default().
	Logger *slog.Logger
	// ValidateOutput makes mcp-go check every result against its tool's output
	// schema. It costs a marshal per call; tests turn it on to prove the
	// results match what clients validate against.
	ValidateOutput bool
	// SessionIdleTTL ends sessions unused for this long (default
	// DefaultSessionIdleTTL); abandoned sessions must not keep their memory.
	SessionIdleTTL time.Duration
	// MaxSessions bounds the live sessions of the server (default
	// DefaultMaxSessions); past it initialize is refused with 429. One
	// project holds at most MaxSessions/ProjectSessionShare of them; one
	// more ends the project's least recently used.
	MaxSessions int
	// MaxSessionsPerKey bounds the live sessions of one key, alone or with
	// others (default DefaultMaxSessionsPerKey); one more ends the key's
	// least recently used.
	MaxSessionsPerKey int
	// MaxStreamsPerKey bounds the open GET and subscriptions/listen streams
	// of one key, counted together (default
	// DefaultMaxStreamsPerKey), and ProjectStreamKeys times it those of one
	// project; the excess is refused with 429.
	MaxStreamsPerKey int
	// SessionOpenRate bounds the sessions all keys of one project together
	// open per second, with bursts of SessionOpenBurstSeconds times it (0
	// or negative: no bound; the application sets DefaultSessionOpenRate).
	// Opening a session costs far more than a call on one, and the per-key
	// rate multiplies with every key a project mints.
	SessionOpenRate float64
	// StreamChecks: how soon a revoked key's sessions and streams end, and
	// how often a listen stream sends a keep-alive (sessions_revoke.go).
	StreamChecks StreamChecks
	// Metrics, when set, counts tool calls by outcome and their latency.
	Metrics *metrics.Metrics
}

// Server is Munin's MCP server: the tools bound to a service, ready to be
// served over HTTP (HTTPHandler) or stdio (ServeStdio).
type Server struct {
	svc  *service.Service
	mcp  *server.MCPServer
	http *server.StreamableHTTPServer
	ids  *sessionIDs
	// subs are the resource subscriptions of both protocol eras
	// (subscribe.go).
	subs *subscriptions
	log  *slog.Logger
	// idleTTL is named in the answer to a refused session.
	idleTTL time.Duration
}

// toolImpls are the tools' handlers and argument checks, by tool name.
func toolImpls(h handlers, opts Options) map[string]toolImpl {
	return map[string]toolImpl{
		"remember": typed(opts.Logger, opts.Metrics, "remember", h.remember),
		"recall":   typed(opts.Logger, opts.Metrics, "recall", h.recall),
		"get":      typed(opts.Logger, opts.Metrics, "get", h.get),
		"list":     typed(opts.Logger, opts.Metrics, "list", h.list),
		"history":  typed(opts.Logger, opts.Metrics, "history", h.history),
		"forget":   typed(opts.Logger, opts.Metrics, "forget", h.forget),
		"review":   typed(opts.Logger, opts.Metrics, "review", h.review),
		"changes":  typed(opts.Logger, opts.Metrics, "changes", h.changes),
	}
}

// New builds the MCP server named "munin" with the eight tools and panic
// recovery; each tool's binder checks its arguments against its schema.
func New(svc *service.Service, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.SessionIdleTTL <= 0 {
		opts.SessionIdleTTL = DefaultSessionIdleTTL
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.MaxSessionsPerKey <= 0 {
		opts.MaxSessionsPerKey = DefaultMaxSessionsPerKey
	}
	if opts.MaxStreamsPerKey <= 0 {
		opts.MaxStreamsPerKey = DefaultMaxStreamsPerKey
	}
	impls := toolImpls(handlers{svc: svc}, opts)
	hooks := &server.Hooks{}
	hooks.AddAfterCallTool(recodeValidationErrors(opts.Logger))
	// The instructions name the caller's projects wherever a client reads
	// them: the initialize answer (protocol up to 2025-11-25) and the
	// server/discover answer (2026-07-28, which has no initialize).
	hooks.AddAfterInitialize(func(ctx context.Context, _ any, _ *mcp.InitializeRequest, res *mcp.InitializeResult) {
		res.Instructions = instructionsFor(ctx)
	})
	hooks.AddAfterDiscover(func(ctx context.Context, _ any, _ *mcp.DiscoverRequest, res *mcp.DiscoverResult) {
		res.Instructions = instructionsFor(ctx)
	})
	rsrc := resources{svc: svc, log: opts.Logger}
	rsrc.addListHook(hooks)
	subs := newSubscriptions(svc, opts.Logger)
	subs.addHooks(hooks)
	// mcp-go ends a session's id through the manager on DELETE and on idle
	// expiry (not when a GET stream closes: the session lives on); the gate
	// ends one when its key or project opens one more than its limit.
	s := &Server{svc: svc, log: opts.Logger, idleTTL: opts.SessionIdleTTL, subs: subs,
		ids: newSessionIDs(opts.MaxSessions, opts.MaxSessionsPerKey, opts.MaxStreamsPerKey, opts.SessionOpenRate, opts.StreamChecks)}
	// A 2025 session's subscriptions end with it, however it ends. onEnd
	// runs with the session table's lock held; drop takes only the
	// registry's lock and the hub's, and neither is ever held by anyone
	// who then takes the session table's.
	s.ids.onEnd = func(id string) { subs.drop(sessionKey(id)) }
	subs.live = s.ids.isLive
	serverOpts := []server.ServerOption{
		server.WithToolCapabilities(false),
		server.WithInstructions(instructions),
		server.WithRecovery(),
		// No server.WithInputSchemaValidation: each tool's binder refuses
		// whatever its input schema refuses (args.go), and mcp-go's check
		// decoded every call's arguments once more (2 % of the server's CPU
		// in the load test's mixed calls).
		server.WithHooks(hooks),
	}
	serverOpts = append(serverOpts, resourceOptions()...)
	if opts.ValidateOutput {
		serverOpts = append(serverOpts, server.WithOutputSchemaValidation())
	}
	s.mcp = server.NewMCPServer("munin", opts.Version, serverOpts...)
	subs.mcp = s.mcp
	for _, tool := range toolDefs() {
		impl, ok := impls[tool.Name]
		if !ok {
			panic(fmt.Sprintf("mcpserver: tool %s has no handler", tool.Name))
		}
		s.mcp.AddTool(tool, impl.handler)
	}
	rsrc.addResourceTemplates(s.mcp)

	s.http = server.NewStreamableHTTPServer(s.mcp,
		server.WithEndpointPath(Endpoint),
		server.WithHTTPContextFunc(carryKey),
		// mcp-go rejects loopback requests whose Host is not localhost (DNS
		// rebinding). Munin authenticates every request with a bearer token
		// that a browser never sends on its own, so rebinding gains an
		// attacker nothing, while the check would break the common setup of
		// a reverse proxy on the same host that keeps the public Host header.
		// Browser Origins are checked by the HTTP server's middleware.
		server.WithDisableLocalhostProtection(true),
		server.WithStreamableHTTPLogger(slog.New(redactSessionIDs(s.log.Handler()))),
		// A resolver rather than WithSessionIdManager: mcp-go asks it per
		// request, so the manager knows whose request opens or uses an id.
		server.WithSessionIdManagerResolver(sessionResolver{s.ids}),
		server.WithSessionIdleTTL(opts.SessionIdleTTL),
	)
	return s
}

// HTTPHandler is the Streamable HTTP handler for /mcp. It must sit behind the
// auth middleware, which authenticates the bearer token and stores the key in
// the request context with service.WithKey. A session id works only with
// the key that opened the session (see gate).
func (s *Server) HTTPHandler() http.Handler { return gate{srv: s, next: s.http} }

// carryKey copies the authenticated caller from the HTTP request into the
// context the tool handlers run in. mcp-go already derives that context from
// the request's, so this is belt and braces: it keeps working if a later
// mcp-go version stops doing so (a tool call without a key fails with
// unauthorized, never runs as someone else).
func carryKey(ctx context.Context, r *http.Request) context.Context {
	if c, err := service.CallerFrom(r.Context()); err == nil {
		return service.WithCaller(ctx, c)
	}
	return ctx
}
