package oauth

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"munin/internal/memory"
	"munin/internal/service"
)

// MaxBodyBytes bounds what the token and registration endpoints read of a
// request body. A token request is a handful of short parameters and a
// registration at most 16 redirect URIs of 2 KiB each, so 16 KiB fits
// every honest request; the server's own body cap sits in front and is
// larger.
const MaxBodyBytes = 16 << 10

// The media types the endpoints accept.
const (
	formType = "application/x-www-form-urlencoded"
	jsonType = "application/json"
)

// CORS answers of the endpoints. Browser-based MCP clients (the MCP
// Inspector) call them from another origin; no cookie or other ambient
// credential is involved (a public client names itself in the body, and
// the code, verifier and refresh token are the proof), so any origin may
// read the answers.
const (
	corsAllowHeaders = "Content-Type, Authorization, MCP-Protocol-Version"
	corsMaxAge       = "600"
)

// endpoints serves TokenPath and RegisterPath.
type endpoints struct {
	cfg Config
	svc *service.Service
	log *slog.Logger
}

// Endpoints serves the token endpoint (POST TokenPath: authorization_code
// and refresh_token grants, OAuth 2.1 §3.2) and the registration endpoint
// (POST RegisterPath: RFC 7591). Both take OPTIONS preflights and answer
// with Access-Control-Allow-Origin: * (see corsAllowHeaders); any other
// method is 405, any other path 404, and every path is 404 while OAuth is
// off (svc.OAuthEnabled). It authenticates no key: the front door must let
// these paths through without one, and without its Origin check.
func Endpoints(c Config, svc *service.Service, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	e := &endpoints{cfg: c, svc: svc, log: log}
	return http.HandlerFunc(e.serveHTTP)
}

func (e *endpoints) serveHTTP(w http.ResponseWriter, r *http.Request) {
	var post func(http.ResponseWriter, *http.Request)
	switch r.URL.Path {
	case TokenPath:
		post = e.token
	case RegisterPath:
		post = e.register
	}
	if post == nil || !e.svc.OAuthEnabled() {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	// A browser shows a script only the safelisted headers of an answer;
	// these two say why a request was refused.
	h.Set("Access-Control-Expose-Headers", "WWW-Authenticate, Retry-After")
	switch r.Method {
	case http.MethodPost:
		post(w, r)
	case http.MethodOptions:
		h.Set("Access-Control-Allow-Methods", http.MethodPost)
		h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
		h.Set("Access-Control-Max-Age", corsMaxAge)
		h.Set("Allow", "POST, OPTIONS")
		w.WriteHeader(http.StatusNoContent)
	default:
		h.Set("Allow", "POST, OPTIONS")
		writeError(w, http.StatusMethodNotAllowed, memory.OAuthInvalidRequest, "method "+r.Method+" is not allowed: "+r.URL.Path+" takes POST")
	}
}

// tokenResponse is a successful token response (RFC 6749 §5.1).
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
}

// token answers POST TokenPath.
func (e *endpoints) token(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	// RFC 6749 §5.2: a client that tried to authenticate in the
	// Authorization header gets 401 with a challenge of that scheme.
	if scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " "); strings.EqualFold(scheme, "Basic") {
		e.refuseClient(w, "client authentication with HTTP Basic is not supported")
		return
	}
	form, ok := readForm(w, r)
	if !ok {
		return
	}
	for _, p := range []string{"client_secret", "client_assertion", "client_assertion_type"} {
		if form.Get(p) != "" {
			e.refuseClient(w, p+" is not supported")
			return
		}
	}
	grant := form.Get("grant_type")
	if grant == "" {
		writeError(w, http.StatusBadRequest, memory.OAuthInvalidRequest, "grant_type is missing")
		return
	}
	if grant != memory.OAuthGrantAuthorizationCode && grant != memory.OAuthGrantRefreshToken {
		writeError(w, http.StatusBadRequest, "unsupported_grant_type", "grant_type "+strconv.Quote(clip(grant))+" is not supported: only authorization_code and refresh_token")
		return
	}
	// A public client names itself in the body (RFC 6749 §4.1.3, §6).
	// Checked here because the service takes an empty client_id for
	// "another client", and a refresh token presented by another client
	// ends its grant: a forgotten parameter must not do that.
	if form.Get("client_id") == "" {
		writeError(w, http.StatusBadRequest, memory.OAuthInvalidRequest, "client_id is missing: this server registers public clients only, which name themselves in the body")
		return
	}
	var tok service.OAuthTokens
	var err error
	if grant == memory.OAuthGrantAuthorizationCode {
		tok, err = e.svc.ExchangeOAuthCode(r.Context(), service.OAuthCodeExchange{
			ClientID: form.Get("client_id"), Code: form.Get("code"), Verifier: form.Get("code_verifier"),
			RedirectURI: form.Get("redirect_uri"), Resource: form.Get("resource")})
	} else {
		tok, err = e.svc.RefreshOAuth(r.Context(), service.OAuthRefresh{
			ClientID: form.Get("client_id"), RefreshToken: form.Get("refresh_token"),
			Resource: form.Get("resource"), Scope: form.Get("scope")})
	}
	if err != nil {
		e.fail(w, r, err, memory.OAuthInvalidGrant)
		return
	}
	writeBody(w, http.StatusOK, tokenResponse{AccessToken: tok.Access, TokenType: "Bearer", ExpiresIn: tok.ExpiresIn,
		RefreshToken: tok.Refresh, Scope: tok.Scope})
}

// refuseClient answers a client that tried to authenticate with a
// secret: invalid_client, 401, and a Basic challenge (RFC 6749 §5.2), so
// that a client which can do without a secret learns it must.
func (e *endpoints) refuseClient(w http.ResponseWriter, what string) {
	e.challenge(w)
	writeError(w, http.StatusUnauthorized, memory.OAuthInvalidClient,
		what+": this server registers public clients only; send client_id in the body and no secret (PKCE protects the code)")
}

// challenge puts the Basic challenge on a 401 invalid_client (RFC 6749
// §5.2; RFC 9110 §15.5.2: every 401 carries one).
func (e *endpoints) challenge(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Basic realm=`+strconv.Quote(e.cfg.PublicURL))
}

// readForm reads a token request body: form-encoded, at most
// MaxBodyBytes, no parameter twice (RFC 6749 §3.2). Parameters in the URL
// are not read (OAuth 2.1 §3.2: the request is the body). On false the
// refusal is written.
func readForm(w http.ResponseWriter, r *http.Request) (url.Values, bool) {
	if !hasType(r, formType) {
		writeError(w, http.StatusBadRequest, memory.OAuthInvalidRequest, "content type "+strconv.Quote(clip(r.Header.Get("Content-Type")))+" is not accepted: send "+formType)
		return nil, false
	}
	body, ok := readBody(w, r)
	if !ok {
		return nil, false
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		writeError(w, http.StatusBadRequest, memory.OAuthInvalidRequest, "the body is not valid "+formType)
		return nil, false
	}
	for name, v := range form {
		if len(v) > 1 {
			writeError(w, http.StatusBadRequest, memory.OAuthInvalidRequest, "parameter "+strconv.Quote(clip(name))+" is sent more than once (RFC 6749 §3.2)")
			return nil, false
		}
	}
	return form, true
}

// readBody reads at most MaxBodyBytes; on false the refusal is written.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusBadRequest, memory.OAuthInvalidRequest, "the body is larger than the limit of "+strconv.Itoa(MaxBodyBytes)+" bytes")
		return nil, false
	case err != nil:
		writeError(w, http.StatusBadRequest, memory.OAuthInvalidRequest, "the body could not be read")
		return nil, false
	}
	return body, true
}

// hasType reports whether the request's Content-Type is want (parameters
// such as charset aside).
func hasType(r *http.Request, want string) bool {
	t, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && t == want
}

// fail answers a service error with its OAuth error name; an error that
// names none (a key or grant that ended in between: unauthorized,
// not_found) is answered as fallback. A server fault is logged with the
// request's context — never the body, which holds codes and tokens — and
// answered without its details.
func (e *endpoints) fail(w http.ResponseWriter, r *http.Request, err error, fallback memory.OAuthError) {
	name := memory.OAuthErrorCode(err)
	status := http.StatusBadRequest
	switch name {
	case "":
		name = string(fallback)
	case string(memory.OAuthInvalidClient):
		status = http.StatusUnauthorized
		e.challenge(w)
	case "server_error":
		status = http.StatusInternalServerError
	case "temporarily_unavailable":
		status = http.StatusServiceUnavailable
		var me *memory.Error
		if errors.As(err, &me) && me.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(me.RetryAfter.Seconds()))))
		}
	}
	if status >= http.StatusInternalServerError {
		e.log.ErrorContext(r.Context(), "oauth endpoint failed", "path", r.URL.Path, "err", err)
	}
	writeError(w, status, memory.OAuthError(name), describe(err))
}

// describe is what a client may read of err: the message of a client's
// error, nothing of an internal one.
func describe(err error) string {
	var me *memory.Error
	if errors.As(err, &me) && me.Code != memory.CodeInternal {
		return me.Message
	}
	return "internal error"
}

// errorResponse is an OAuth error response (RFC 6749 §5.2, RFC 7591
// §3.2.2).
type errorResponse struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// writeError answers an OAuth error. Errors are never cached either: the
// same request may succeed a moment later.
func writeError(w http.ResponseWriter, status int, name memory.OAuthError, description string) {
	noStore(w)
	writeBody(w, status, errorResponse{Error: string(name), Description: description})
}

// writeBody answers v as JSON with status.
func writeBody(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", jsonType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// noStore forbids caching (RFC 6749 §5.1: responses with tokens or
// credentials; Pragma for HTTP/1.0 caches).
func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
}

// clip shortens a client's string quoted back in an error.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
