// Package oauth is the OAuth 2.1 transport of Munin's own authorization
// server (docs/security.md): the discovery documents a client reads first
// (RFC 9728 protected resource metadata, RFC 8414 authorization server
// metadata) and the challenge a 401 carries so that a client finds them.
// Like the other transports it translates and decides nothing: who may
// sign in and what a token may do is the service's.
//
// OAuth is on only when the server knows its public URL (--public-url):
// the issuer and every resource a token is bound to are URLs under it, and
// a loopback-only server, which no hosted client can reach, advertises
// nothing and behaves as without OAuth.
package oauth

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Paths of the authorization server, under the public URL.
const (
	AuthorizePath = "/authorize"
	TokenPath     = "/token"
	RegisterPath  = "/register"

	// WellKnownResource is RFC 9728's protected resource metadata; a
	// resource at path P also has it at WellKnownResource+P.
	WellKnownResource = "/.well-known/oauth-protected-resource"
	// WellKnownServer is RFC 8414's authorization server metadata (the
	// issuer has no path, so nothing is inserted).
	WellKnownServer = "/.well-known/oauth-authorization-server"
)

// ScopeMemory is the one scope a token carries: it acts as the keys it was
// signed in with, no more and no less, so finer scopes would only repeat
// the keys' roles. ScopeOfflineAccess is accepted and changes nothing:
// every grant may refresh.
const (
	ScopeMemory        = "memory"
	ScopeOfflineAccess = "offline_access"
)

// Config is where the server is reached from the internet.
type Config struct {
	// PublicURL is the origin clients use, e.g. https://munin.example.com:
	// https (http only for a loopback host, in tests), no path, query or
	// fragment. It is the issuer.
	PublicURL string
}

// ParsePublicURL checks a --public-url value and returns it lowercased and
// without a trailing slash: the issuer must be spelled the same
// everywhere, and clients compare it byte for byte.
func ParsePublicURL(s string) (string, error) {
	u, err := url.Parse(strings.TrimSuffix(s, "/"))
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("public URL %q must be an absolute https URL such as https://munin.example.com", s)
	}
	if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		return "", fmt.Errorf("public URL %q must use https: OAuth clients refuse plain http except on a loopback host", s)
	}
	if u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("public URL %q must be an origin only (no path, query, fragment or user); serve Munin at the root of its host name", s)
	}
	return u.Scheme + "://" + strings.ToLower(u.Host), nil
}

func loopbackHost(h string) bool {
	return h == "localhost" || h == "127.0.0.1" || h == "::1"
}

// Resource is the canonical URL of the resource at path (e.g. "/mcp"):
// the audience a token is bound to (RFC 8707).
func (c Config) Resource(path string) string { return c.PublicURL + path }

// ResourceMetadataURL is where the metadata of the resource at path is
// served, the URL a 401 names.
func (c Config) ResourceMetadataURL(path string) string {
	return c.PublicURL + WellKnownResource + path
}

// ResourceMetadata is RFC 9728's document for one resource.
type ResourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
	ResourceDocumentation  string   `json:"resource_documentation,omitempty"`
}

// ResourceMetadataFor is the document of the resource at path.
// offline_access is not among the scopes: the MCP specification asks
// resources not to list it.
func (c Config) ResourceMetadataFor(path, name string) ResourceMetadata {
	return ResourceMetadata{
		Resource:               c.Resource(path),
		AuthorizationServers:   []string{c.PublicURL},
		ScopesSupported:        []string{ScopeMemory},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           name,
	}
}

// ServerMetadata is RFC 8414's document of the authorization server.
type ServerMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	ResponseModesSupported            []string `json:"response_modes_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	// ClientIDMetadataDocumentSupported: a client may use the https URL
	// of its metadata document as client_id (CIMD).
	ClientIDMetadataDocumentSupported bool `json:"client_id_metadata_document_supported"`
	// AuthorizationResponseIssParameterSupported: the redirect back to the
	// client carries iss (RFC 9207), against mix-up attacks.
	AuthorizationResponseIssParameterSupported bool `json:"authorization_response_iss_parameter_supported"`
}

// ServerMetadataDoc is the authorization server's document. "none" is the
// only auth method: every client is public (every MCP host uses PKCE
// instead of a secret), and Claude picks CIMD only when "none" is listed.
func (c Config) ServerMetadataDoc() ServerMetadata {
	auth := []string{"none"}
	return ServerMetadata{
		Issuer:                                     c.PublicURL,
		AuthorizationEndpoint:                      c.PublicURL + AuthorizePath,
		TokenEndpoint:                              c.PublicURL + TokenPath,
		RegistrationEndpoint:                       c.PublicURL + RegisterPath,
		ScopesSupported:                            []string{ScopeMemory, ScopeOfflineAccess},
		ResponseTypesSupported:                     []string{"code"},
		ResponseModesSupported:                     []string{"query"},
		GrantTypesSupported:                        []string{"authorization_code", "refresh_token"},
		CodeChallengeMethodsSupported:              []string{"S256"},
		TokenEndpointAuthMethodsSupported:          auth,
		ClientIDMetadataDocumentSupported:          true,
		AuthorizationResponseIssParameterSupported: true,
	}
}

// Challenge is the WWW-Authenticate value of a 401 from the resource at
// path: where its metadata is, the scope to ask for, and, when a token was
// sent and refused, error="invalid_token" (RFC 6750 §3.1) so that a
// client refreshes instead of starting over.
func (c Config) Challenge(path string, tokenSent bool) string {
	v := fmt.Sprintf(`Bearer resource_metadata=%q, scope=%q`, c.ResourceMetadataURL(path), ScopeMemory)
	if tokenSent {
		v += `, error="invalid_token"`
	}
	return v
}

// writeJSON answers a discovery document: public, cacheable for an hour
// (it changes only with the configuration).
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	w.Header().Set("Access-Control-Allow-Origin", "*") // browser-based clients read discovery cross-origin
	_ = json.NewEncoder(w).Encode(v)
}
