package mcpserver

import (
	"time"
)

// Stream check defaults, used when the StreamChecks field of the same name
// is zero.
const (
	// DefaultRevokeSweep is how often the server asks whether the keys of
	// its open sessions and streams were revoked. A request of a revoked key
	// is refused at once (the key cache empties on revocation), but a GET or
	// subscriptions/listen stream outlives the request that authenticated
	// it; it ends within this interval. One check per distinct key, not per
	// stream: about 25 µs each (one control-database read).
	DefaultRevokeSweep = 5 * time.Second
	// DefaultListenKeepAlive is how often an idle subscriptions/listen
	// stream sends an SSE comment line, so that proxies and clients that
	// drop silent connections keep it: the same 15 s as the REST change
	// stream's heartbeat (changestream.DefaultHeartbeat).
	DefaultListenKeepAlive = 15 * time.Second
)

// StreamChecks are the intervals of the checks open streams get; the zero
// value is the defaults.
type StreamChecks struct {
	// RevokeSweep is how often the keys of open sessions and streams are
	// checked: the sessions and streams of a revoked key end (default
	// DefaultRevokeSweep).
	RevokeSweep time.Duration
	// ListenKeepAlive is how often an open subscriptions/listen stream
	// sends a keep-alive comment (default DefaultListenKeepAlive).
	ListenKeepAlive time.Duration
}

// withDefaults fills the zero fields.
func (c StreamChecks) withDefaults() StreamChecks {
	if c.RevokeSweep <= 0 {
		c.RevokeSweep = DefaultRevokeSweep
	}
	if c.ListenKeepAlive <= 0 {
		c.ListenKeepAlive = DefaultListenKeepAlive
	}
	return c
}
