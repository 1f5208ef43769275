package oauth

import (
	"net/http"
	"strconv"
	"strings"

	"munin/internal/memory"
)

// registration is a client information response (RFC 7591 §3.2.1): the
// registered metadata as the server holds it, with the id it assigned.
type registration struct {
	ClientID                string   `json:"client_id"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	Scope                   string   `json:"scope,omitempty"`
}

// register answers POST RegisterPath: a client registers itself (RFC 7591
// §3), unauthenticated. memory.ParseClientRegistration decides what is
// accepted; the answer restates what was kept — a missing client_name is
// filled in, repeated redirect URIs are dropped — because the client must
// use the server's values (RFC 7591 §3.2.1). No secret is issued.
func (e *endpoints) register(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	if !hasType(r, jsonType) {
		writeError(w, http.StatusBadRequest, memory.OAuthInvalidRequest, "content type "+strconv.Quote(clip(r.Header.Get("Content-Type")))+" is not accepted: send "+jsonType+" (RFC 7591 §3.1)")
		return
	}
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	reg, err := memory.ParseClientRegistration(body)
	if err != nil {
		e.fail(w, r, err, memory.OAuthInvalidClientMetadata)
		return
	}
	c, err := e.svc.RegisterOAuthClient(r.Context(), reg)
	if err != nil {
		e.fail(w, r, err, memory.OAuthInvalidClientMetadata)
		return
	}
	writeBody(w, http.StatusCreated, registration{
		ClientID: c.ID, ClientIDIssuedAt: c.CreatedAt.Unix(), ClientName: c.Name, RedirectURIs: c.RedirectURIs,
		// Every client may refresh (the service issues refresh tokens to
		// all), so the answer says so whatever was asked (RFC 7591 §3.2.1
		// lets the server replace requested values).
		GrantTypes: []string{memory.OAuthGrantAuthorizationCode, memory.OAuthGrantRefreshToken}, ResponseTypes: []string{"code"}, TokenEndpointAuthMethod: "none",
		Scope: strings.Join(reg.Scope, " ")})
}
