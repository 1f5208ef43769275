package embed

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// An endpoint that quotes the request's Authorization header in its error
// (a status error or an answer that is no JSON) does not carry the key into
// the error, which the worker logs: no part of the answer is in it, only
// the status and a fixed reason.
func TestClientErrorsHideTheKey(t *testing.T) {
	const key, quote = "sk-client-test-key-42", "invalid credentials: "
	for _, c := range []struct {
		name, contentType string
		status            int
	}{
		{"401", "application/json", http.StatusUnauthorized},
		{"500", "application/json", http.StatusInternalServerError},
		{"html", "text/html", http.StatusOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", c.contentType)
				w.WriteHeader(c.status)
				fmt.Fprintf(w, "%s%s", quote, r.Header.Get("Authorization"))
			}))
			t.Cleanup(srv.Close)
			cl, err := NewClient(ClientOptions{URL: srv.URL, Model: "m", Key: key})
			if err != nil {
				t.Fatal(err)
			}
			_, err = cl.Embed(context.Background(), []string{"a"})
			if err == nil || strings.Contains(err.Error(), key[:5]) || strings.Contains(err.Error(), quote) {
				t.Fatalf("error %v: want one without the key and the answer", err)
			}
			var se *StatusError
			if c.status != http.StatusOK && (!errors.As(err, &se) || se.Code != c.status || !strings.Contains(err.Error(), fmt.Sprint(c.status))) {
				t.Fatalf("error %v: want the status %d", err, c.status)
			}
		})
	}
}
