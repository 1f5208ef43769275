package embed

import (
	"context"
	"net/http"
	"testing"
	"time"

	"munin/internal/embed/embedtest"
)

// The client's health follows its calls: a failure of the endpoint (by
// kind) sets it failing and is counted; a refused text or a call its
// caller cancelled changes nothing; the next good answer clears it.
func TestClientHealth(t *testing.T) {
	ep := newEndpoint(t, 8)
	c := newClient(t, ep.URL, ClientOptions{Timeout: 50 * time.Millisecond})
	call := func(ctx context.Context) { _, _ = c.Embed(ctx, []string{"a"}) }
	if h := c.Health(); h.Failing {
		t.Fatalf("before any call: %+v", h)
	}
	for _, s := range []struct {
		set  func()
		kind string
	}{
		{func() { ep.Fail(http.StatusUnauthorized) }, FailureKey},
		{func() { ep.Fail(http.StatusForbidden) }, FailureKey},
		{func() { ep.Fail(http.StatusNotFound) }, FailureNotFound},
		{func() { ep.Fail(http.StatusServiceUnavailable) }, FailureStatus},
		{func() { ep.SetMode(embedtest.HTML) }, FailureAnswer},
		{func() { ep.SetMode(embedtest.Bloated) }, FailureAnswer},
		{func() { ep.SetDelay(time.Second) }, FailureTimeout},
	} {
		s.set()
		before := c.Failures(s.kind)
		call(context.Background())
		h := c.Health()
		if !h.Failing || h.Kind != s.kind || h.Reason == "" || h.Since.IsZero() || c.Failures(s.kind) != before+1 {
			t.Fatalf("after a failure of kind %s: %+v, %d counted", s.kind, h, c.Failures(s.kind)-before)
		}
		ep.SetDelay(0)
		ep.SetMode(embedtest.OK)
		call(context.Background())
		if h := c.Health(); h.Failing {
			t.Fatalf("after a good answer: %+v", h)
		}
	}

	// Neither a refused text nor a cancelled call says the endpoint fails.
	ep.Fail(http.StatusBadRequest)
	call(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ep.Fail(http.StatusUnauthorized)
	call(ctx)
	if h := c.Health(); h.Failing {
		t.Fatalf("after a refused text and a cancelled call: %+v", h)
	}

	// An endpoint that is gone.
	ep.Close()
	call(context.Background())
	if h := c.Health(); !h.Failing || h.Kind != FailureNetwork {
		t.Fatalf("endpoint gone: %+v", h)
	}
}
