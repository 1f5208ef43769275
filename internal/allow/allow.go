// Package allow names the methods a gorilla/mux router serves on a request's
// path, for the Allow header a 405 answer must carry (RFC 9110, 15.5.6).
package allow

import (
	"net/http"
	"strings"

	"github.com/gorilla/mux"
)

var candidates = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// Methods lists, comma-separated, the methods router has a route for on r's
// path. It runs only on the 405 path, so probing each method is cheap enough.
func Methods(router *mux.Router, r *http.Request) string {
	var ok []string
	for _, m := range candidates {
		probe := r.Clone(r.Context())
		probe.Method = m
		var match mux.RouteMatch
		if router.Match(probe, &match) && match.MatchErr == nil {
			ok = append(ok, m)
		}
	}
	return strings.Join(ok, ", ")
}

// Set writes the Allow header of a 405 answer for r.
func Set(w http.ResponseWriter, router *mux.Router, r *http.Request) {
	if methods := Methods(router, r); methods != "" {
		w.Header().Set("Allow", methods)
	}
}
