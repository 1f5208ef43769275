package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// DefaultSessionIdleTTL is how long an MCP session may stay unused before the
// server forgets it; the client then gets 404 and opens a new session, as
// the MCP specification describes.
const DefaultSessionIdleTTL = 30 * time.Minute

const sessionPrefix = "mcp-session-"

// sessionIDs issues and checks session ids. Unlike mcp-go's default manager,
// it keeps no record of ended sessions: a well-formed id it does not know is
// reported as terminated (404, "start a new session"), so 10,000 sessions
// opened and abandoned leave nothing behind once they expire.
type sessionIDs struct {
	live sync.Map // id → struct{}
	open atomic.Int64
}

var _ server.SessionIdManager = (*sessionIDs)(nil)

func (s *sessionIDs) Generate() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	id := sessionPrefix + hex.EncodeToString(b[:])
	s.live.Store(id, struct{}{})
	s.open.Add(1)
	return id
}

func (s *sessionIDs) Validate(id string) (isTerminated bool, err error) {
	if _, ok := s.live.Load(id); ok {
		return false, nil
	}
	if rest, ok := strings.CutPrefix(id, sessionPrefix); ok && len(rest) == 32 && isHex(rest) {
		return true, nil // ended, expired or from before a restart
	}
	return false, fmt.Errorf("malformed session id")
}

func (s *sessionIDs) Terminate(id string) (isNotAllowed bool, err error) {
	if _, loaded := s.live.LoadAndDelete(id); loaded {
		s.open.Add(-1)
	}
	return false, nil
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

// OpenSessions is the number of MCP sessions the server currently keeps.
func (s *Server) OpenSessions() int64 { return s.ids.open.Load() }

// Close stops the idle-session sweeper and ends every session.
func (s *Server) Close(ctx context.Context) error {
	return s.http.Shutdown(ctx)
}
