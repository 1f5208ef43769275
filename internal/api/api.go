// Package api is Munin's REST JSON API under /api/v1: the same operations as
// the MCP tools (remember, recall, get, list, history, forget) and the same
// JSON field names, for scripts and tools that do not speak MCP.
//
// Every route takes an optional project ("workspace/project"): a query
// parameter on GET and DELETE, a body field on POST and PUT. Without it a
// call acts in the caller's first key's project; recall then searches all
// of the caller's projects. GET /me says which projects the caller reaches.
//
// Authentication happens outside: the httpserver middleware turns the bearer
// key list into a caller and puts it in the request context
// (service.WithCaller).
package api

import (
	"net/http"

	"github.com/gorilla/mux"

	"munin/internal/allow"
	"munin/internal/changestream"
	"munin/internal/memory"
	"munin/internal/service"
)

// Prefix is the path every route of this package starts with.
const Prefix = "/api/v1"

// handler holds what every route needs.
type handler struct {
	svc     *service.Service
	streams *changestream.Streams
}

// keyed is a route body that runs with the authenticated caller. It either
// answers the request and returns nil, or answers nothing and returns the
// error: with writes every error in one place (the shape of tailscale's
// tsweb.ReturnHandler), so no route repeats the error answer.
type keyed func(w http.ResponseWriter, r *http.Request, c memory.Caller) error

// New returns the REST API handler. It serves paths starting with Prefix and
// expects the caller in the request context; without one it answers 401.
func New(svc *service.Service) http.Handler {
	return newHandler(svc, defaultStreams(svc))
}

func newHandler(svc *service.Service, streams *changestream.Streams) http.Handler {
	h := &handler{svc: svc, streams: streams}
	r := mux.NewRouter()
	// Slugs contain '/', and a slug with ".." must reach validation and be
	// refused with a clear 400 instead of being cleaned into another path
	// and redirected.
	r.SkipClean(true)
	r.NotFoundHandler = http.HandlerFunc(notFound)
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		allow.Set(w, r, req)
		methodNotAllowed(w, req)
	})

	// Full paths on the root router: a subrouter would answer a wrong method
	// with 404 instead of 405.
	v1 := prefixed{r}
	v1.Handle("/entries", h.with(h.remember)).Methods(http.MethodPost)
	v1.Handle("/entries", h.with(h.list)).Methods(http.MethodGet)
	// {slug:.+} takes the rest of the path, slashes included. History has its
	// own prefix because "x/history" is itself a valid slug.
	v1.Handle("/entries/{slug:.+}", h.with(h.get)).Methods(http.MethodGet)
	v1.Handle("/entries/{slug:.+}", h.with(h.forget)).Methods(http.MethodDelete)
	v1.Handle("/history/{slug:.+}", h.with(h.history)).Methods(http.MethodGet)
	v1.Handle("/recall", h.with(h.recallGet)).Methods(http.MethodGet)
	v1.Handle("/recall", h.with(h.recallPost)).Methods(http.MethodPost)
	v1.Handle("/project/budget", h.with(h.setBudget)).Methods(http.MethodPut)
	v1.Handle("/project/review", h.with(h.setReview)).Methods(http.MethodPut)
	v1.Handle("/project/similar", h.with(h.setSimilar)).Methods(http.MethodPut)
	v1.Handle("/proposals", h.with(h.proposals)).Methods(http.MethodGet)
	v1.Handle("/proposals/{id}", h.with(h.proposal)).Methods(http.MethodGet)
	v1.Handle("/proposals/{id}/approve", h.with(h.approve)).Methods(http.MethodPost)
	v1.Handle("/proposals/{id}/reject", h.with(h.reject)).Methods(http.MethodPost)
	v1.Handle("/me", h.with(h.me)).Methods(http.MethodGet)
	v1.Handle("/changes", h.with(h.changes)).Methods(http.MethodGet)
	v1.Handle(changestream.Suffix, h.with(h.changeStream)).Methods(http.MethodGet)
	return r
}

// with runs fn with the caller from the context, or answers 401, and writes
// the error fn returns. The middleware should have refused a request without
// a caller already; this guards a mount without it.
func (h *handler) with(fn keyed) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := service.CallerFrom(r.Context())
		if err == nil {
			err = fn(w, r, c)
		}
		if err != nil {
			WriteError(w, err)
		}
	})
}

// reply answers res with status, or returns err for with to answer.
func reply(w http.ResponseWriter, status int, res any, err error) error {
	if err != nil {
		return err
	}
	writeJSON(w, status, res)
	return nil
}

func notFound(w http.ResponseWriter, r *http.Request) {
	WriteError(w, memory.Errorf(memory.CodeNotFound, "no route %s %s; see docs/rest-api.md for the endpoints under %s", r.Method, r.URL.Path, Prefix))
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	WriteErrorStatus(w, http.StatusMethodNotAllowed, memory.CodeInvalid,
		"method "+r.Method+" is not allowed on "+r.URL.Path)
}

// prefixed registers routes under Prefix.
type prefixed struct{ r *mux.Router }

func (p prefixed) Handle(path string, h http.Handler) *mux.Route {
	return p.r.Handle(Prefix+path, h)
}

// me: GET /me → {projects: [{project, role, agent}], server_admin?}: the
// projects the caller's keys reach, the default first. It takes no
// parameters (a project would only filter what the caller already knows).
func (h *handler) me(w http.ResponseWriter, r *http.Request, c memory.Caller) error {
	_, err := readParams(r)
	return reply(w, http.StatusOK, h.svc.Me(c), err)
}
