// Package httpretry is the well-behaved client of Munin's load and
// hostile-load tests: a transport that waits out a 429 for as long as its
// Retry-After asks and sends the request again.
package httpretry

import (
	"net/http"
	"strconv"
	"time"
)

// On429 waits out each 429 answer (Retry-After, one second if absent) and
// sends the request again; requests without GetBody are not retried. Seen,
// if set, is called with every answer, retried ones included.
type On429 struct {
	Next http.RoundTripper
	Seen func(*http.Response)
}

// RoundTrip implements http.RoundTripper.
func (rt On429) RoundTrip(req *http.Request) (*http.Response, error) {
	for {
		resp, err := rt.Next.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		if rt.Seen != nil {
			rt.Seen(resp)
		}
		if resp.StatusCode != http.StatusTooManyRequests || req.GetBody == nil {
			return resp, nil
		}
		wait := time.Second
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
			wait = time.Duration(s) * time.Second
		}
		resp.Body.Close()
		select {
		case <-time.After(wait):
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		req.Body = body
	}
}
