package httpserver

import (
	"net/http"

	"github.com/rs/cors"
)

// crossOrigin lets browser-based MCP and REST clients (an inspector page on
// localhost, or an origin given with --allowed-origins) call /mcp and
// /api/v1: it answers their CORS preflight without a key, since browsers
// send none there, and marks the real answers readable for them. The set of
// origins is the origin policy's, so CORS never widens what checkOrigin
// lets through. Credentials stay off: these routes take bearer keys, never
// cookies, and the cookie-based web UI gets no CORS headers at all.
func crossOrigin(p *originPolicy) func(http.Handler) http.Handler {
	c := cors.New(cors.Options{
		AllowOriginVaryRequestFunc: func(r *http.Request, _ string) (bool, []string) {
			return p.checkOrigin(r) == "", nil
		},
		AllowedMethods: []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete},
		// MCP sends Mcp-Session-Id, Mcp-Protocol-Version and, since
		// 2026-07-28, per-request headers such as Mcp-Method; new ones come
		// with new protocol versions, so any requested header is accepted.
		AllowedHeaders: []string{"*"},
		ExposedHeaders: []string{"Mcp-Session-Id", "Mcp-Protocol-Version", "Www-Authenticate", "Retry-After"},
		MaxAge:         600,
	})
	return c.Handler
}
