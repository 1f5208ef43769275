package mcpserver

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/server"
)

var _ server.SessionIdManager = (*sessionIDs)(nil)

// Generate, Validate and Terminate serve mcp-go where a request is not at
// hand (the idle sweeper, shutdown); requests get a boundIDs.

// Generate issues an id that is never live: sessions are opened only on a
// ticket, through boundIDs.
func (s *sessionIDs) Generate() string { return s.generate(nil) }

// Validate reports a live id as valid, a well-formed unknown one as
// terminated (ended, expired or from before a restart), anything else as
// malformed.
func (s *sessionIDs) Validate(id string) (isTerminated bool, err error) {
	s.mu.Lock()
	_, ok := s.live[id]
	s.mu.Unlock()
	if ok {
		return false, nil
	}
	if rest, ok := strings.CutPrefix(id, sessionPrefix); ok && len(rest) == 32 && isHex(rest) {
		return true, nil
	}
	return false, fmt.Errorf("malformed session id")
}

// Terminate ends a session (DELETE, idle expiry, shutdown).
func (s *sessionIDs) Terminate(id string) (isNotAllowed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.live[id]; ok {
		s.endLocked(sess)
	}
	return false, nil
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

// boundIDs is the manager as one request sees it: ids belong to its caller,
// and a new session is opened only on the ticket the gate took for it.
type boundIDs struct {
	ids  *sessionIDs
	pass *gatePass
}

// Generate opens the session the gate admitted. An initialize that carries
// a live Mcp-Session-Id of its caller also opens a new session (mcp-go
// ignores the header there); its place is taken here, and if there is none
// the id is not recorded and the gate makes mcp-go forget it.
func (b boundIDs) Generate() string {
	if b.pass.ticket == nil {
		t, evicted, err := b.ids.admit(b.pass.owner, b.pass.project)
		b.pass.evicted = append(b.pass.evicted, evicted...)
		if err != nil {
			b.pass.orphan = b.ids.generate(nil)
			return b.pass.orphan
		}
		b.pass.ticket = t
	}
	return b.ids.generate(b.pass.ticket)
}

// Validate is sessionIDs.Validate, with another caller's id as unknown.
func (b boundIDs) Validate(id string) (isTerminated bool, err error) {
	if !b.owns(id) {
		return b.ids.Validate("") // malformed: 404
	}
	return b.ids.Validate(id)
}

// Terminate ends the caller's own session only.
func (b boundIDs) Terminate(id string) (isNotAllowed bool, err error) {
	if !b.owns(id) {
		return true, nil
	}
	return b.ids.Terminate(id)
}

func (b boundIDs) owns(id string) bool {
	b.ids.mu.Lock()
	defer b.ids.mu.Unlock()
	sess, ok := b.ids.live[id]
	return !ok || sess.owner == b.pass.owner // an unknown id is nobody's: Validate says so
}

// sessionResolver hands mcp-go a boundIDs for a request that came through
// the gate, and the bare manager otherwise (the sweeper passes nil).
type sessionResolver struct{ ids *sessionIDs }

// ResolveSessionIdManager implements server.SessionIdManagerResolver.
func (r sessionResolver) ResolveSessionIdManager(req *http.Request) server.SessionIdManager {
	if req != nil {
		if pass, ok := req.Context().Value(gatePassKey{}).(*gatePass); ok {
			return boundIDs{ids: r.ids, pass: pass}
		}
	}
	return r.ids
}

// SessionStats counts what the session limits did since the start.
type SessionStats struct {
	// Unknown counts requests refused with 404 for an id that is not a live
	// session of the caller.
	Unknown int64
	// Evicted counts sessions ended because one of their keys, or the
	// project they are charged to, opened one more than its limit.
	Evicted int64
	// RefusedFull counts new sessions refused with 429: at the server's
	// limit, or while a key or project had its limit of initializes in
	// flight.
	RefusedFull int64
	// RefusedStreams counts GET and subscriptions/listen streams refused
	// with 429 at a key's or a project's limit.
	RefusedStreams int64
}

// SessionStats reports the session counters for the metrics.
func (s *Server) SessionStats() SessionStats {
	return SessionStats{
		Unknown:        s.ids.unknown.Load(),
		Evicted:        s.ids.evicted.Load(),
		RefusedFull:    s.ids.refusedFull.Load(),
		RefusedStreams: s.ids.refusedStreams.Load(),
	}
}

// OpenSessions is the number of MCP sessions the server currently keeps.
func (s *Server) OpenSessions() int64 { return s.ids.open.Load() }

// Close ends every open subscriptions/listen stream (each with its final
// result), stops the idle-session sweeper and ends every session.
func (s *Server) Close(ctx context.Context) error {
	s.ids.endListens()
	return s.http.Shutdown(ctx)
}

// OpenListenStreams is the number of subscriptions/listen streams
// (protocol 2026-07-28) open now.
func (s *Server) OpenListenStreams() int { return s.ids.openListens() }
