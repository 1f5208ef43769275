package embed

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"time"
)

// The kinds of endpoint failure, the reason label of the metric
// munin_embed_endpoint_failures_total. A text the endpoint refuses (400,
// 413, 422) is no failure of the endpoint, nor is a call its caller
// cancelled.
const (
	FailureKey      = "key"       // 401 or 403: the key is wrong, expired or rotated
	FailureNotFound = "not_found" // 404: a wrong URL or model name
	FailureStatus   = "status"    // any other status than 200
	FailureTimeout  = "timeout"   // the call's deadline passed
	FailureNetwork  = "network"   // no connection
	FailureAnswer   = "answer"    // an answer that is no usable vectors
)

// FailureKinds lists the kinds, for one metric series each.
var FailureKinds = []string{FailureKey, FailureNotFound, FailureStatus, FailureTimeout, FailureNetwork, FailureAnswer}

// failureReasons are the kinds in words anyone may read (a web page, a
// log): no URL, no answer, no key.
var failureReasons = map[string]string{
	FailureKey:      "the embedding endpoint refuses Munin's key",
	FailureNotFound: "the embedding endpoint or its model is not found",
	FailureStatus:   "the embedding endpoint answers with an error",
	FailureTimeout:  "the embedding endpoint does not answer in time",
	FailureNetwork:  "the embedding endpoint cannot be reached",
	FailureAnswer:   "the embedding endpoint's answers are unusable",
}

// Health is what the client knows of its endpoint from the calls so far.
type Health struct {
	// Failing is set while the last call ended in a failure of the endpoint.
	Failing bool
	// Since is when the failures in a row began (zero when not failing).
	Since time.Time
	// Kind is the last failure's kind (one of FailureKinds), Reason the
	// same in words, fit to show to anyone reading a project.
	Kind, Reason string
}

// health tracks the endpoint's failures across every call of a client:
// the worker's batches and the query embeddings of recalls.
type health struct {
	mu     sync.Mutex
	now    Health
	counts map[string]int64
}

// record notes the outcome of one call; ctx is the caller's.
func (h *health) record(ctx context.Context, err error) {
	kind := failureKind(ctx, err)
	if err != nil && kind == "" {
		return // says nothing about the endpoint
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		h.now = Health{}
		return
	}
	if h.counts == nil {
		h.counts = map[string]int64{}
	}
	h.counts[kind]++
	if !h.now.Failing {
		h.now.Failing, h.now.Since = true, time.Now()
	}
	h.now.Kind, h.now.Reason = kind, failureReasons[kind]
}

// failureKind classifies a failed call; "" when it is none of the
// endpoint's: the text refused, or the caller cancelled.
func failureKind(ctx context.Context, err error) string {
	var se *StatusError
	var ue *url.Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &se):
		switch {
		case se.RefusesText():
			return ""
		case se.Code == 401 || se.Code == 403:
			return FailureKey
		case se.Code == 404:
			return FailureNotFound
		}
		return FailureStatus
	case errors.Is(err, context.DeadlineExceeded):
		return FailureTimeout
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		return ""
	case errors.As(err, &ue):
		return FailureNetwork
	}
	return FailureAnswer
}

// Health reports the endpoint's state as the client's calls found it.
func (c *Client) Health() Health {
	c.health.mu.Lock()
	defer c.health.mu.Unlock()
	return c.health.now
}

// Failures counts the calls that failed with kind since the client was built.
func (c *Client) Failures(kind string) int64 {
	c.health.mu.Lock()
	defer c.health.mu.Unlock()
	return c.health.counts[kind]
}

// Failing tells whether the endpoint's last call failed: a caller that must
// not wait for a down endpoint (remember's duplicate hint) skips it.
func (c *Client) Failing() bool { return c.Health().Failing }
