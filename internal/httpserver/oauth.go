package httpserver

import (
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"munin/internal/api"
	"munin/internal/oauth"
)

// KeyOnlyMCP is the MCP endpoint for clients that must not learn of OAuth:
// some (Cursor) ignore their configured Authorization header once a server
// advertises OAuth. Here a 401 names no resource metadata, no discovery
// document describes this path, and only keys are accepted.
const KeyOnlyMCP = "/key/mcp"

// mountOAuth adds what OAuth sign-in needs to r: the discovery documents
// (RFC 9728 for /mcp and /api/v1, RFC 8414), the token and registration
// endpoints, and the key-only MCP endpoint. The authorize page is the web
// UI's (it signs the person in), so it is not mounted here.
func mountOAuth(r *mux.Router, cfg Config, keysOnly func(http.Handler) http.Handler, mcp http.Handler, cors func(http.Handler) http.Handler) {
	disc := oauth.Discovery(*cfg.OAuth, oauth.Resource{Path: "/mcp", Name: "Munin MCP"}, oauth.Resource{Path: api.Prefix, Name: "Munin REST API"})
	r.Handle(oauth.WellKnownServer, disc)
	r.Handle(oauth.WellKnownResource+"/mcp", disc)
	r.Handle(oauth.WellKnownResource+api.Prefix, disc)
	if cfg.OAuthEndpoints != nil {
		r.Handle(oauth.TokenPath, cfg.OAuthEndpoints)
		r.Handle(oauth.RegisterPath, cfg.OAuthEndpoints)
	}
	r.Handle(KeyOnlyMCP, cors(allowMethods(keysOnly(mcp), http.MethodGet, http.MethodPost, http.MethodDelete)))
}

// oauthPublic tells the OAuth paths any web page may call: the discovery
// documents and the token and registration endpoints. They take no cookie
// and act on nothing the caller does not hold (a code, a refresh token),
// so the Origin check, which guards ambient credentials, would only lock
// out browser-based MCP clients (the MCP Inspector).
func oauthPublic(path string) bool {
	return strings.HasPrefix(path, "/.well-known/oauth-") || path == oauth.TokenPath || path == oauth.RegisterPath
}
