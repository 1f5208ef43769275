package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"munin/internal/limit"
	"munin/internal/memory"
	"munin/internal/service"
)

// How long a refused client is told to wait (Retry-After): sessions free up
// as clients DELETE them or they idle out; streams as clients hang up.
const (
	sessionsRetryAfter = 30 * time.Second
	openingRetryAfter  = 1 * time.Second
	streamsRetryAfter  = 10 * time.Second
)

// gatePass carries the caller from the gate to mcp-go's calls of the
// session manager (sessionResolver → boundIDs).
type gatePass struct {
	owner owner
	// project is what a session opened by this request is charged to: the
	// project of the caller's first key.
	project memory.ProjectRef
	ticket  *ticket // set for an initialize only
	// evicted are the sessions of the caller's keys ended to make room for
	// this one; orphan an id mcp-go was given with no place left for it.
	evicted []string
	orphan  string
}

type gatePassKey struct{}

// gate stands in front of mcp-go's Streamable HTTP handler. mcp-go keeps
// state for any Mcp-Session-Id it is sent (a GET with an invented id stays
// in its maps for the idle TTL), so every id is checked here first: only a
// live session of the calling key gets through; anything else is 404 and
// nothing is kept. The gate also applies the session and stream limits.
type gate struct {
	srv  *Server
	next http.Handler
}

func (g gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Protocol 2026-07-28 has no sessions: mcp-go ignores Mcp-Session-Id on
	// such a request, mints none and keeps nothing per id. Its one
	// long-lived request, subscriptions/listen, counts as a stream.
	if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		if IsListen(r) {
			g.serveListen(w, r)
			return
		}
		g.next.ServeHTTP(w, r)
		return
	}
	c, err := service.CallerFrom(r.Context())
	if err != nil {
		writeRPCError(w, http.StatusUnauthorized, 0, "unauthorized: the request carries no key")
		return
	}
	ids := g.srv.ids
	pass := &gatePass{owner: ownerOf(c), project: c.First().Project}
	agent := c.First().Agent
	id := r.Header.Get(server.HeaderKeySessionID)
	switch {
	case id == "" && r.Method == http.MethodPost:
		if !isInitialize(r) {
			break // mcp-go answers: a call without a session is 404
		}
		if _, refused := limit.Acquire(ids.opens.RateSlot(pass.project)); refused != nil {
			retry := max(1, int(math.Ceil(refused.RetryAfter.Seconds())))
			writeRPCError(w, http.StatusTooManyRequests, time.Duration(retry)*time.Second, fmt.Sprintf(
				"unavailable: project %s opens more than %g MCP sessions per second (all its keys together); retry in %d s",
				projectLabel(pass.project), ids.opens.Rule().Rate, retry))
			return
		}
		t, evicted, err := ids.admit(pass.owner, pass.project)
		for _, id := range evicted { // before the answer, so the client sees it gone
			g.dropEvicted(id, agent)
		}
		if err != nil {
			g.refuseSession(w, err, pass.project)
			return
		}
		pass.ticket = t
	case id == "":
		writeRPCError(w, http.StatusBadRequest, 0, fmt.Sprintf(
			"invalid: %s %s needs the %s header that initialize returned; open a session with initialize first",
			r.Method, Endpoint, server.HeaderKeySessionID))
		return
	case !ids.use(id, pass.owner):
		// Unknown, ended, malformed or another key's: the same answer, so
		// that an id reveals nothing about anyone else's sessions.
		writeRPCError(w, http.StatusNotFound, 0, fmt.Sprintf(
			"not_found: no live MCP session has this %s (unknown, ended or expired); open a new session with initialize, without %s",
			server.HeaderKeySessionID, server.HeaderKeySessionID))
		return
	case r.Method == http.MethodGet:
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		done, err := ids.openStream(id, pass.owner, cancel)
		if err != nil {
			g.refuseStream(w, err)
			return
		}
		defer done()
		defer g.srv.watchRevocation()()
		r = r.WithContext(ctx)
	}
	defer g.finish(pass, id, r.Method, agent)
	g.next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), gatePassKey{}, pass)))
}

// finish settles a request mcp-go has served: an unused ticket is given
// back, and mcp-go forgets every session that is no longer live — the one
// evicted for this request, an id minted without a place (orphan), and a
// session that ended while mcp-go served a request on it (evicted, swept,
// deleted), which mcp-go may have touched or registered again after it was
// cleared: an initialize registers its session only after the answer went
// out.
func (g gate) finish(pass *gatePass, id, method, agent string) {
	ids := g.srv.ids
	if pass.ticket != nil {
		ids.release(pass.ticket)
	}
	for _, id := range pass.evicted {
		g.dropEvicted(id, agent)
	}
	if pass.orphan != "" {
		g.srv.dropState(pass.orphan)
	}
	if pass.ticket != nil && pass.ticket.id != "" && !ids.isLive(pass.ticket.id) {
		g.srv.dropState(pass.ticket.id)
	}
	if id != "" && method != http.MethodDelete && !ids.isLive(id) {
		g.srv.dropState(id)
	}
}

func (g gate) dropEvicted(id, agent string) {
	g.srv.dropState(id)
	g.srv.log.Debug("mcp session ended: one of its keys or its project opened one more than its limit",
		"session", shortID(id), "agent", agent, "key_limit", g.srv.ids.maxPerKey, "project_limit", g.srv.ids.maxPerProject)
}

func (g gate) refuseSession(w http.ResponseWriter, err error, p memory.ProjectRef) {
	ids := g.srv.ids
	switch err {
	case errOpeningTooMany:
		writeRPCError(w, http.StatusTooManyRequests, openingRetryAfter, fmt.Sprintf(
			"unavailable: a key of this request is opening more than %d MCP sessions at once (its limit); retry in %s",
			ids.maxPerKey, openingRetryAfter))
		return
	case errProjectOpening:
		writeRPCError(w, http.StatusTooManyRequests, openingRetryAfter, fmt.Sprintf(
			"unavailable: project %s is opening more than %d MCP sessions at once (its share of the server's %d); retry in %s",
			projectLabel(p), ids.maxPerProject, ids.maxTotal, openingRetryAfter))
		return
	}
	writeRPCError(w, http.StatusTooManyRequests, sessionsRetryAfter, fmt.Sprintf(
		"unavailable: the server holds its limit of %d MCP sessions; retry in %s (sessions end on DELETE or after %s unused)",
		ids.maxTotal, sessionsRetryAfter, g.srv.idleTTL))
}

// projectLabel names a project in a refusal ("server" for a server-admin
// key's, which is none).
func projectLabel(p memory.ProjectRef) string { return memory.Key{Project: p}.ProjectLabel() }

func (g gate) refuseStream(w http.ResponseWriter, err error) {
	if err == errUnknownSession { // ended between use and openStream
		writeRPCError(w, http.StatusNotFound, 0, "not_found: the MCP session ended; open a new session with initialize")
		return
	}
	if err == errProjectStreamFull {
		writeRPCError(w, http.StatusTooManyRequests, streamsRetryAfter, fmt.Sprintf(
			"unavailable: the keys of this session's project already have %d open streams on %s (GET and subscriptions/listen; the project's limit); close one and retry in %s",
			g.srv.ids.projectStreams.Rule().InFlight, Endpoint, streamsRetryAfter))
		return
	}
	writeRPCError(w, http.StatusTooManyRequests, streamsRetryAfter, fmt.Sprintf(
		"unavailable: a key of this request already has %d open streams on %s (GET and subscriptions/listen; its limit); close one and retry in %s",
		g.srv.ids.keyStreams.Rule().InFlight, Endpoint, streamsRetryAfter))
}

// isInitialize reports whether a POST body is an initialize request, the
// way mcp-go decides it (the "method" member); the body is put back.
func isInitialize(r *http.Request) bool {
	body, ok := peekBody(r)
	if !ok {
		return false
	}
	var msg struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &msg) == nil && msg.Method == string(mcp.MethodInitialize)
}

// peekBody reads the request body and puts it back for mcp-go (the HTTP
// server has buffered it whole, see bufferBody); ok is false without one.
func peekBody(r *http.Request) (body []byte, ok bool) {
	if r.Body == nil {
		return nil, false
	}
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, err == nil
}

// dropState makes mcp-go forget a session Munin ended (evicted): its DELETE
// path is the one public way to clear the per-id maps it keeps. The id is
// already gone from the manager, so the request reaches nothing else.
func (s *Server) dropState(id string) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodDelete, Endpoint, nil)
	if err != nil {
		return // cannot happen: constant method and path
	}
	req.Header.Set(server.HeaderKeySessionID, id)
	s.http.ServeHTTP(discard{}, req)
}

// discard is a ResponseWriter for dropState's internal request.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

// writeRPCError answers with a JSON-RPC error object (id null), as MCP
// clients expect from /mcp; the message starts with Munin's error code.
func writeRPCError(w http.ResponseWriter, status int, retryAfter time.Duration, msg string) {
	writeRPCErrorID(w, status, retryAfter, nil, msg)
}

// writeRPCErrorID is writeRPCError answering the request with id (nil:
// null, for a request whose id is not known).
func writeRPCErrorID(w http.ResponseWriter, status int, retryAfter time.Duration, id json.RawMessage, msg string) {
	code := -32000 // server error
	switch status {
	case http.StatusBadRequest:
		code = mcp.INVALID_REQUEST
	case http.StatusNotFound:
		code = -32001 // "session not found", as the TypeScript SDK answers
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int(retryAfter/time.Second)))
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": code, "message": msg},
	})
}
