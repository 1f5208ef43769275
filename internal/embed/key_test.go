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
// the error, which the worker logs; the rest of the answer stays readable.
func TestClientErrorsHideTheKey(t *testing.T) {
	const key, quote = "sk-client-test-key-42", "invalid credentials: Bearer "
	for _, c := range []struct {
		name, contentType string
		status            int
		pad               int // bytes before the quote
	}{
		{"status", "application/json", http.StatusUnauthorized, 0},
		// The key starts 5 bytes before the end of what an error shows.
		{"status, key at the cut", "application/json", http.StatusInternalServerError, snippetMost - len(quote) - 5},
		{"html", "text/html", http.StatusOK, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", c.contentType)
				w.WriteHeader(c.status)
				fmt.Fprintf(w, "%s%s%s", strings.Repeat("x", c.pad), strings.TrimSuffix(quote, "Bearer "), r.Header.Get("Authorization"))
			}))
			t.Cleanup(srv.Close)
			cl, err := NewClient(ClientOptions{URL: srv.URL, Model: "m", Key: key})
			if err != nil {
				t.Fatal(err)
			}
			_, err = cl.Embed(context.Background(), []string{"a"})
			if err == nil || strings.Contains(err.Error(), key) || strings.Contains(err.Error(), key[:5]) {
				t.Fatalf("error %v: want one without the key", err)
			}
			var se *StatusError
			if c.status != http.StatusOK && (!errors.As(err, &se) || se.Code != c.status) {
				t.Fatalf("error %v: want the status %d", err, c.status)
			}
			if c.pad == 0 && !strings.Contains(err.Error(), quote+"[key]") {
				t.Fatalf("error %v: want the answer with the key cut out", err)
			}
		})
	}
}
