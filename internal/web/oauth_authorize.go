package web

import (
	"net/http"
	"net/url"
	"strings"
	"unicode"

	"munin/internal/memory"
	"munin/internal/service"
)

// OAuth sign-in and consent (issue 25, docs/security.md): the page an app
// such as claude.ai sends a person to (oauth.AuthorizePath). Signing in is
// signing in with Munin keys, exactly as on the web UI's own sign-in page,
// and leaves the person signed in to the web UI; the person then sees what
// the app asks for and allows or denies it. The service checks the
// request on every step (the form's hidden fields are the client's request
// as sent, never trusted) and issues the code; this file only translates.
//
// Steps, all POSTs to the same path (the form's "step"):
//   - signin: the pasted keys start a web session, as /login does;
//   - continue: the web session this browser already has. The GET cannot
//     use it: the session cookie is SameSite=Strict, and the app's redirect
//     here is a cross-site navigation, so the browser leaves it off; the
//     page's own POST is same-site and carries it;
//   - addkey: a key of another project joins the session, as "Add a key";
//   - allow: the code, back to the client's redirect URI;
//   - deny: access_denied, back to the client's redirect URI.
// signin and continue need no CSRF token (there is no session yet, or the
// page could not know it), as /login; the cross-origin check of every POST
// guards them, and they only show a page. addkey and allow, which change
// what a session or an app holds, need the session's token.

// oauthFields are the authorization request's parameters (RFC 6749
// §4.1.1, RFC 7636, RFC 8707) that the forms carry along.
var oauthFields = []string{"response_type", "client_id", "redirect_uri", "state", "code_challenge", "code_challenge_method", "resource", "scope"}

// oauthParam is one hidden field of the forms.
type oauthParam struct{ Name, Value string }

// authorization is a request the service has checked and whose redirect
// URI is therefore the client's own.
type authorization struct {
	req    service.OAuthRequest
	a      service.OAuthAuthorization
	target redirectTarget
}

// oauthRequestOf reads the request from vals: the query of the GET, the
// posted form of a POST (never the query then). dup names a parameter
// sent more than once, which RFC 6749 §3.1 forbids.
func oauthRequestOf(vals url.Values) (req service.OAuthRequest, dup string) {
	for _, f := range oauthFields {
		if len(vals[f]) > 1 && dup == "" {
			dup = f
		}
	}
	return service.OAuthRequest{
		ResponseType: vals.Get("response_type"), ClientID: vals.Get("client_id"), RedirectURI: vals.Get("redirect_uri"),
		State: vals.Get("state"), CodeChallenge: vals.Get("code_challenge"), CodeChallengeMethod: vals.Get("code_challenge_method"),
		Resource: vals.Get("resource"), Scope: vals.Get("scope"),
	}, dup
}

// checkAuthorization has the service check the request in vals. When the
// request cannot go on it answers the browser itself and returns false:
// with an error page while the client or its redirect URI is not known to
// be genuine (never a redirect then, RFC 6749 §4.1.2.1), else by sending
// the error back to the client. On true, the answer's CSP lets forms lead
// to the redirect URI.
func (h *Handler) checkAuthorization(w http.ResponseWriter, r *http.Request, vals url.Values) (*authorization, bool) {
	req, dup := oauthRequestOf(vals)
	a, redirect, err := h.svc.CheckOAuthRequest(r.Context(), req)
	// A parameter sent twice is refused (RFC 6749 §3.1); twice the client
	// or its redirect URI means neither is known, whatever the first says.
	if dup == "client_id" || dup == "redirect_uri" || err == nil && dup != "" {
		err = memory.OAuthErrorf(memory.CodeInvalid, memory.OAuthInvalidRequest, "%s is sent more than once", dup)
		redirect = redirect && dup != "client_id" && dup != "redirect_uri"
	}
	if err != nil && !redirect {
		if memory.ErrorCode(err) == memory.CodeInternal {
			h.renderError(w, r, nil, err)
			return nil, false
		}
		h.render(w, r, nil, statusOf(err), "error", view{Title: "Sign-in request refused",
			Error: "Munin cannot sign this app in: " + message(err) + ". Nothing was sent back to the app, since its address could not be confirmed; start again from the app."})
		return nil, false
	}
	az := &authorization{req: req, a: a, target: targetOf(a.RedirectURI)}
	if err != nil {
		h.redirectError(w, r, az, memory.OAuthErrorCode(err), message(err))
		return nil, false
	}
	w.Header().Set("Content-Security-Policy", contentSecurityPolicy(az.target.FormAction))
	return az, true
}

// authorizeGet shows the sign-in page of a checked request.
func (h *Handler) authorizeGet(w http.ResponseWriter, r *http.Request) {
	if az, ok := h.checkAuthorization(w, r, r.URL.Query()); ok {
		h.renderOAuth(w, r, nil, az, http.StatusOK, "")
	}
}

// authorizePost runs one step of the sign-in and consent, after checking
// the request the form carries once more.
func (h *Handler) authorizePost(w http.ResponseWriter, r *http.Request) {
	if err := parseForm(r); err != nil {
		h.renderError(w, r, nil, err)
		return
	}
	az, ok := h.checkAuthorization(w, r, r.PostForm)
	if !ok {
		return
	}
	switch step := r.PostFormValue("step"); step {
	case "signin":
		h.oauthSignIn(w, r, az)
	case "continue":
		h.oauthSession(w, r, az, false, func(w http.ResponseWriter, r *http.Request, rq *request) {
			h.renderOAuth(w, r, rq, az, http.StatusOK, "")
		})
	case "addkey":
		h.oauthSession(w, r, az, true, func(w http.ResponseWriter, r *http.Request, rq *request) { h.oauthAddKey(w, r, rq, az) })
	case "allow":
		h.oauthSession(w, r, az, true, func(w http.ResponseWriter, r *http.Request, rq *request) { h.oauthAllow(w, r, rq, az) })
	case "deny":
		h.redirectError(w, r, az, "access_denied", "the person denied the request")
	default:
		h.renderOAuth(w, r, nil, az, http.StatusBadRequest, "step must be signin, continue, addkey, allow or deny")
	}
}

// keyList turns pasted keys separated by commas, spaces or line breaks
// into the comma-separated list the sign-in checks.
func keyList(pasted string) string {
	return strings.Join(strings.FieldsFunc(pasted, func(c rune) bool { return c == ',' || unicode.IsSpace(c) }), ",")
}

// oauthSignIn signs in with the pasted keys as /login does — a new
// session, replacing any this browser had — and shows the consent.
func (h *Handler) oauthSignIn(w http.ResponseWriter, r *http.Request, az *authorization) {
	c, err := h.authenticate(r.Context(), keyList(r.PostFormValue("key")))
	if err != nil {
		if code := memory.ErrorCode(err); code != memory.CodeUnauthorized && code != memory.CodeInvalid {
			h.renderError(w, r, nil, err)
			return
		}
		h.renderOAuth(w, r, nil, az, statusOf(err), message(err))
		return
	}
	sess := h.startSession(w, r, c)
	caller := c.AsPerson()
	h.renderOAuth(w, r, &request{sess: sess, caller: caller, key: caller.First()}, az, http.StatusOK, "")
}

// oauthSession runs fn with the browser's web session (and its CSRF token
// when csrf), within its keys' limits; without a session the sign-in page
// says why.
func (h *Handler) oauthSession(w http.ResponseWriter, r *http.Request, az *authorization, csrf bool, fn func(http.ResponseWriter, *http.Request, *request)) {
	rq, ok := h.sessionOr(w, r, func() {
		h.renderOAuth(w, r, nil, az, http.StatusUnauthorized,
			"This browser is not signed in to Munin, or its session has ended: paste your keys to sign in.")
	})
	if !ok {
		return
	}
	h.limited(w, r, rq, func(w http.ResponseWriter, r *http.Request) {
		if csrf && !csrfOK(r, rq) {
			h.renderError(w, r, rq, errCSRF)
			return
		}
		fn(w, r, rq)
	})
}

// oauthAddKey adds the pasted keys to the session, as "Add a key" on the
// overview does, and shows the consent for the larger key set.
func (h *Handler) oauthAddKey(w http.ResponseWriter, r *http.Request, rq *request, az *authorization) {
	added, err := h.authenticate(r.Context(), keyList(r.PostFormValue("key")))
	var joined memory.Caller
	if err == nil {
		joined, err = service.Join(rq.caller, added)
	}
	if err != nil {
		if code := memory.ErrorCode(err); code != memory.CodeUnauthorized && code != memory.CodeInvalid {
			h.renderError(w, r, rq, err)
			return
		}
		h.renderOAuth(w, r, rq, az, statusOf(err), message(err))
		return
	}
	sess, ok := h.sessions.setKeys(rq.sess.id, joined)
	if !ok {
		h.renderOAuth(w, r, nil, az, http.StatusUnauthorized, "Your session has ended: paste your keys to sign in.")
		return
	}
	setCookie(w, r, sess.id, 0)
	caller := joined.AsPerson()
	h.renderOAuth(w, r, &request{sess: sess, caller: caller, key: caller.First()}, az, http.StatusOK, "")
}

// oauthAllow records the consent and sends the code back to the client
// (RFC 6749 §4.1.2) with state and iss (RFC 9207).
func (h *Handler) oauthAllow(w http.ResponseWriter, r *http.Request, rq *request, az *authorization) {
	if rq.caller.ServerAdmin() {
		h.renderOAuth(w, r, rq, az, http.StatusForbidden, serverAdminRefusal)
		return
	}
	code, err := h.svc.AuthorizeOAuth(r.Context(), rq.caller, az.req)
	switch memory.ErrorCode(err) {
	case "":
	case memory.CodeForbidden, memory.CodeUnauthorized:
		h.renderOAuth(w, r, rq, az, statusOf(err), message(err))
		return
	case memory.CodeInvalid:
		h.redirectError(w, r, az, memory.OAuthErrorCode(err), message(err))
		return
	default:
		h.renderError(w, r, rq, err)
		return
	}
	params := url.Values{"code": {code}}
	h.answerParams(params, az)
	redirectBack(w, r, az.a.RedirectURI, params)
}

// serverAdminRefusal is why a server-admin session cannot allow an app.
const serverAdminRefusal = "A server-admin key administers the server and reads no memory, so it cannot be given to an app: sign in with the keys of the projects the app should reach."

// redirectError sends an error back to the client (RFC 6749 §4.1.2.1).
func (h *Handler) redirectError(w http.ResponseWriter, r *http.Request, az *authorization, name, description string) {
	if name == "" {
		name = string(memory.OAuthInvalidRequest)
	}
	params := url.Values{"error": {name}, "error_description": {errorDescription(description)}}
	h.answerParams(params, az)
	redirectBack(w, r, az.a.RedirectURI, params)
}

// answerParams adds what every answer to the client carries: its state, if
// it sent one, and the issuer (RFC 9207), which lets it tell this server's
// answers from another's.
func (h *Handler) answerParams(params url.Values, az *authorization) {
	if az.req.State != "" {
		params.Set("state", az.req.State)
	}
	if h.issuer != "" {
		params.Set("iss", h.issuer)
	}
}
