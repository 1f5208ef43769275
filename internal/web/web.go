// Package web is Munin's web UI for people: sign in with a key, browse
// projects and entries, search, read every version with diffs, the audit and
// search logs, and curate — edit, restore, forget, manage keys and budgets.
//
// Pages are rendered on the server with html/template; reading works without
// JavaScript. Sessions live in server memory and hold key ids, never a key:
// a person may add keys of further projects to a session ("Add a key"), and
// the session is then one caller with several keys, as an agent with several
// keys in its Authorization header. With OAuth on, the same sign-in serves
// the authorize page an app sends a person to (oauth_authorize.go). The web
// does no authorization of its own: every page and write asks the service,
// exactly as an agent's call does.
package web

import (
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"munin/internal/allow"
	"munin/internal/changestream"
	"munin/internal/memory"
	"munin/internal/oauth"
	"munin/internal/reqlog"
	"munin/internal/service"
)

// cookieName is the session cookie.
const cookieName = "munin_session"

// Options configure the web UI. The zero value is usable.
type Options struct {
	// Logger receives internal errors; nil means slog.Default().
	Logger *slog.Logger
	// IdleTimeout ends a session after this long without a request (default 8h).
	IdleTimeout time.Duration
	// MaxAge ends a session this long after sign-in (default 24h).
	MaxAge time.Duration
	// TrustedOrigins are extra origins whose form posts are accepted (a
	// reverse proxy's public origin), as for the API's allowed origins.
	TrustedOrigins []string
	// Now is the clock; nil means time.Now. Tests move it.
	Now func() time.Time
	// LimitKey, when set, wraps every signed-in request with the server's
	// limits per key (the caller is in the request context,
	// service.WithCaller), so a session is held to its keys' limits as REST
	// and MCP are.
	LimitKey func(http.Handler) http.Handler
	// Streams serve the project pages' live streams; share the REST API's
	// (api.NewWithStreams) so that a key's streams count together. Nil:
	// streams of the web UI's own with the default limits.
	Streams *changestream.Streams
	// Issuer is the OAuth authorization server's issuer identifier (the
	// public URL, --public-url), sent as iss with every answer of the
	// authorize page to the client (RFC 9207). The authorize page is served
	// only when the service has OAuth on (svc.OAuthEnabled).
	Issuer string
}

// Handler serves the web UI. Mount it at "/" behind the server's common
// middleware (recovery, request log, Origin/Host check, body cap); it does
// its own authentication with session cookies.
type Handler struct {
	svc      *service.Service
	log      *slog.Logger
	sessions *sessions
	pages    *pages
	cursors  *cursors
	limitKey func(http.Handler) http.Handler // nil: no limits per key
	streams  *changestream.Streams
	now      func() time.Time
	issuer   string // OAuth issuer (Options.Issuer)
	h        http.Handler
}

// New builds the web UI over the browse use cases (and the service they
// write through).
func New(svc *service.Service, opts Options) (*Handler, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = defaultIdleTimeout
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = defaultMaxAge
	}
	p, err := loadPages()
	if err != nil {
		return nil, err
	}
	cur, err := newCursors()
	if err != nil {
		return nil, err
	}
	h := &Handler{
		svc:      svc,
		log:      opts.Logger,
		sessions: newSessions(opts.IdleTimeout, opts.MaxAge, opts.Now),
		pages:    p,
		cursors:  cur,
		limitKey: opts.LimitKey,
		streams:  streamsOr(opts.Streams, svc),
		now:      opts.Now,
		issuer:   opts.Issuer,
	}
	// CrossOriginProtection rejects state-changing requests a browser marks
	// as cross-site (Sec-Fetch-Site, else Origin against Host); the
	// per-session token in every form is the second, independent defence.
	cop := http.NewCrossOriginProtection()
	for _, o := range opts.TrustedOrigins {
		if err := cop.AddTrustedOrigin(o); err != nil {
			return nil, err
		}
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.renderError(w, r, nil, memory.Errorf(memory.CodeForbidden, "cross-origin form posts are refused: submit the form from Munin's own pages"))
	}))
	h.h = securityHeaders(cop.Handler(h.routes()))
	return h, nil
}

// ServeHTTP serves the web UI.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.h.ServeHTTP(w, r) }

func (h *Handler) routes() http.Handler {
	r := mux.NewRouter()
	// Slugs keep their slashes and dots; ".." is refused by validation, not
	// cleaned into another path.
	r.SkipClean(true)
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.renderError(w, r, nil, memory.Errorf(memory.CodeNotFound, "no page %s", r.URL.Path))
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		allow.Set(w, r, req)
		h.renderErrorStatus(w, req, nil, http.StatusMethodNotAllowed, "method "+req.Method+" is not allowed here")
	})
	get := []string{http.MethodGet, http.MethodHead}
	r.Handle("/static/{file}", http.HandlerFunc(serveStatic)).Methods(get...)
	r.Handle("/favicon.ico", http.HandlerFunc(serveFavicon)).Methods(get...)
	r.HandleFunc("/", h.home).Methods(get...)
	r.HandleFunc("/login", h.login).Methods(http.MethodPost)
	r.Handle("/logout", h.post(h.logout)).Methods(http.MethodPost)
	r.Handle("/search", h.page(h.searchAll)).Methods(get...)
	r.Handle("/session/keys", h.post(h.addKey)).Methods(http.MethodPost)
	r.Handle("/session/keys/{id:[0-9]+}/remove", h.post(h.removeKey)).Methods(http.MethodPost)
	r.Handle("/keys", h.page(h.keys)).Methods(get...)
	r.Handle("/keys", h.post(h.createKey)).Methods(http.MethodPost)
	r.Handle("/keys/{id:[0-9]+}/revoke", h.post(h.revokeKey)).Methods(http.MethodPost)
	// OAuth sign-in and consent (oauth_authorize.go), only with OAuth on:
	// otherwise the path is an unknown page, as before.
	if h.svc.OAuthEnabled() {
		r.HandleFunc(oauth.AuthorizePath, h.authorizeGet).Methods(get...)
		r.HandleFunc(oauth.AuthorizePath, h.authorizePost).Methods(http.MethodPost)
	}

	// Full paths on the root router: in a subrouter, a wrong method on one
	// route can end as 404 instead of 405 (gorilla/mux).
	const proj = "/w/{ws}/p/{p}"
	r.Handle(proj, h.page(h.project)).Methods(get...)
	r.Handle(proj+"/new", h.page(h.newForm)).Methods(get...)
	r.Handle(proj+"/save", h.post(h.save)).Methods(http.MethodPost)
	r.Handle(proj+"/e/{slug:.+}", h.page(h.entry)).Methods(get...)
	r.Handle(proj+"/edit/{slug:.+}", h.page(h.editForm)).Methods(get...)
	r.Handle(proj+"/forget/{slug:.+}", h.post(h.forget)).Methods(http.MethodPost)
	r.Handle(proj+"/restore/{slug:.+}", h.post(h.restore)).Methods(http.MethodPost)
	r.Handle(proj+"/forgotten", h.page(h.forgotten)).Methods(get...)
	r.Handle(proj+"/audit", h.page(h.audit)).Methods(get...)
	r.Handle(proj+changestream.Suffix, http.HandlerFunc(h.changeStream)).Methods(http.MethodGet)
	r.Handle(proj+"/searches", h.page(h.searches)).Methods(get...)
	r.Handle(proj+"/settings", h.page(h.settings)).Methods(get...)
	r.Handle(proj+"/settings", h.post(h.saveSettings)).Methods(http.MethodPost)
	r.Handle(proj+"/settings/review", h.post(h.saveReview)).Methods(http.MethodPost)
	r.Handle(proj+"/settings/similar", h.post(h.saveSimilar)).Methods(http.MethodPost)
	r.Handle(proj+"/review", h.page(h.review)).Methods(get...)
	r.Handle(proj+"/review/{n:[0-9]+}", h.page(h.proposal)).Methods(get...)
	r.Handle(proj+"/review/{n:[0-9]+}/edit", h.page(h.approveForm)).Methods(get...)
	r.Handle(proj+"/review/{n:[0-9]+}/approve", h.post(h.approve)).Methods(http.MethodPost)
	r.Handle(proj+"/review/{n:[0-9]+}/reject", h.post(h.reject)).Methods(http.MethodPost)
	return r
}

// securityHeaders applies to every page. The CSP allows only Munin's own
// stylesheet and script: even if sanitizing ever let markup through, a
// memory could not run script, load a tracking image or post a form elsewhere.
// connect-src 'self' lets the script open the project page's live stream.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", contentSecurityPolicy(""))
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// contentSecurityPolicy is the web UI's CSP. formAction, when not empty,
// is one more source form posts may lead to: the authorize page sets the
// client's checked redirect origin there, because Chromium applies
// form-action to the redirect that follows a form post as well
// (oauth_csp.go). Every other directive is the same on every page.
func contentSecurityPolicy(formAction string) string {
	fa := "'self'"
	if formAction != "" {
		fa += " " + formAction
	}
	return "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; connect-src 'self'; " +
		"form-action " + fa + "; base-uri 'none'; frame-ancestors 'none'"
}

// request is what a signed-in handler knows about its caller.
type request struct {
	sess   session
	caller memory.Caller // the session's live keys, in the session's order
	key    memory.Key    // the caller's first key, not yet scoped to a project
	heavy  func()        // releases the place for heavy work the page holds (holdHeavy)
}

// releaseHeavy gives back the place for heavy work rq holds, if any.
func (rq *request) releaseHeavy() {
	if rq.heavy != nil {
		rq.heavy()
		rq.heavy = nil
	}
}

// handlerFunc is a page handler; a returned error becomes an error page with
// the status of its code.
type handlerFunc func(w http.ResponseWriter, r *http.Request, rq *request) error

// signedIn returns the caller's session and live keys, or CodeUnauthorized.
// Every key of the session is loaded by id: a revoked one leaves the session
// (the page says so), and a session left without keys ends.
func (h *Handler) signedIn(r *http.Request) (*request, error) {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return nil, memory.Errorf(memory.CodeUnauthorized, "sign in with a key first")
	}
	sess, ok := h.sessions.get(c.Value)
	if !ok {
		return nil, memory.Errorf(memory.CodeUnauthorized, "your session has ended; sign in again")
	}
	keys := make([]memory.Key, 0, len(sess.keyIDs))
	var revoked []int64
	var revokedProjects []string
	for i, id := range sess.keyIDs {
		key, err := h.svc.KeyByID(r.Context(), id)
		if memory.ErrorCode(err) == memory.CodeUnauthorized {
			revoked, revokedProjects = append(revoked, id), append(revokedProjects, sess.projects[i])
			continue
		}
		if err != nil {
			return nil, err
		}
		keys = append(keys, key)
	}
	if len(revoked) > 0 {
		if sess, ok = h.sessions.dropKeys(sess.id, revoked); !ok {
			return nil, memory.Errorf(memory.CodeUnauthorized, "the key of this session was revoked; sign in again")
		}
		msg := "The key for " + revokedProjects[0] + " was revoked; it is no longer part of this session."
		if len(revokedProjects) > 1 {
			msg = "The keys for " + strings.Join(revokedProjects, ", ") + " were revoked; they are no longer part of this session."
		}
		h.sessions.addFlash(sess.id, msg)
	}
	// A person signed in to the web UI writes directly with a write or
	// admin key, even where the project reviews the writes of agents
	// (issue 23); the service reads the mark.
	caller := memory.NewCaller(keys...).AsPerson()
	noteCaller(r, caller)
	return &request{sess: sess, caller: caller, key: caller.First()}, nil
}

// noteCaller names the caller in the request log as the API does: its first
// key's agent and the projects of all its keys.
func noteCaller(r *http.Request, c memory.Caller) {
	projects := make([]string, 0, len(c.Keys()))
	for _, k := range c.Keys() {
		projects = append(projects, k.ProjectLabel())
	}
	reqlog.NoteCaller(r.Context(), c.First().Agent, strings.Join(projects, ","))
}

// page wraps a GET handler: without a session it sends the browser to the
// sign-in page.
func (h *Handler) page(fn handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rq, err := h.signedIn(r)
		if err != nil {
			if memory.ErrorCode(err) == memory.CodeUnauthorized {
				clearCookie(w, r)
				http.Redirect(w, r, "/", http.StatusSeeOther)
				return
			}
			h.renderError(w, r, nil, err)
			return
		}
		h.limited(w, r, rq, func(w http.ResponseWriter, r *http.Request) {
			defer rq.releaseHeavy()
			if err := fn(w, r, rq); err != nil {
				h.renderError(w, r, rq, err)
			}
		})
	})
}

// limited runs a signed-in request within its caller's limits, if any (the
// server's limits per key charge the caller's first key, as for REST and
// MCP); the limits answer a request over them themselves (429).
func (h *Handler) limited(w http.ResponseWriter, r *http.Request, rq *request, run http.HandlerFunc) {
	if h.limitKey == nil {
		run(w, r)
		return
	}
	h.limitKey(run).ServeHTTP(w, r.WithContext(service.WithCaller(r.Context(), rq.caller)))
}

// post wraps a state-changing handler (its route takes POST only): it needs
// a session, a parsed form and the session's CSRF token; otherwise nothing
// happens.
func (h *Handler) post(fn handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rq, err := h.signedIn(r)
		if err != nil {
			if memory.ErrorCode(err) == memory.CodeUnauthorized {
				clearCookie(w, r)
			}
			h.renderError(w, r, nil, err)
			return
		}
		h.limited(w, r, rq, func(w http.ResponseWriter, r *http.Request) {
			defer rq.releaseHeavy()
			if err := parseForm(r); err != nil {
				h.renderError(w, r, rq, err)
				return
			}
			if !csrfOK(r, rq) {
				h.renderError(w, r, rq, errCSRF)
				return
			}
			if err := fn(w, r, rq); err != nil {
				h.renderError(w, r, rq, err)
			}
		})
	})
}

// errCSRF refuses a form post without the session's CSRF token.
var errCSRF = memory.Errorf(memory.CodeForbidden,
	"this form is out of date or did not come from Munin (missing or wrong CSRF token); reload the page and try again")

// csrfOK reports whether the posted form carries rq's session's CSRF token.
func csrfOK(r *http.Request, rq *request) bool {
	token := r.PostFormValue("csrf")
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(rq.sess.csrf)) == 1
}

// parseForm reads the posted form; a body over the server's cap is too_large.
func parseForm(r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return memory.Errorf(memory.CodeTooLarge, "the form is larger than the limit of %d bytes", tooBig.Limit)
		}
		return memory.Errorf(memory.CodeInvalid, "the form could not be read")
	}
	return nil
}

// setCookie sends the session cookie: not readable by script, never sent
// with cross-site requests, and only over TLS when the page came over TLS.
func setCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name:     cookieName,
		Value:    value,
		Path:     "/",
		MaxAge:   maxAge,
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
		Secure:   servedOverHTTPS(r),
	})
}

// servedOverHTTPS: TLS here, or a browser on an https page posting to us
// through a proxy that ends TLS (its Origin says https; the front door
// admits only allowed origins). A Secure flag too many only keeps the cookie
// off plain HTTP, so a wrong "yes" is harmless.
func servedOverHTTPS(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(strings.ToLower(r.Header.Get("Origin")), "https://")
}

func clearCookie(w http.ResponseWriter, r *http.Request) { setCookie(w, r, "", -1) }

// redirect sends the browser to url after a successful post, with a message
// for the next page (post/redirect/get: a reload does not post twice).
func (h *Handler) redirect(w http.ResponseWriter, r *http.Request, rq *request, url, flash string) error {
	if flash != "" {
		h.sessions.setFlash(rq.sess.id, flash)
	}
	http.Redirect(w, r, url, http.StatusSeeOther)
	return nil
}
