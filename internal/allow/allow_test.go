package allow

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gorilla/mux"
)

func TestMethods(t *testing.T) {
	r := mux.NewRouter()
	noop := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	r.Handle("/entries", noop).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/entries", noop).Methods(http.MethodPost)
	sub := r.PathPrefix("/w/{ws}").Subrouter()
	sub.Handle("/save", noop).Methods(http.MethodPost)
	r.NotFoundHandler = noop
	r.MethodNotAllowedHandler = noop
	for path, want := range map[string]string{
		"/entries":  "GET, HEAD, POST",
		"/w/a/save": "POST",
		"/nothing":  "",
	} {
		if got := Methods(r, httptest.NewRequest(http.MethodDelete, path, nil)); got != want {
			t.Errorf("Methods(%s) = %q, want %q", path, got, want)
		}
	}
}
