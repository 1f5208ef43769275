package cluster

import (
	"testing"
	"time"
)

// TestLeaseTimes: the validity window after a keepalive ends before etcd can expire the lease — by
// max(250 ms, TTL/10) — and never counts on more than etcd granted; etcd gets whole seconds, rounded up.
func TestLeaseTimes(t *testing.T) {
	cases := []struct {
		ttl     time.Duration
		granted int64
		window  time.Duration
		seconds int64
	}{
		{time.Second, 1, 750 * time.Millisecond, 1},
		{2 * time.Second, 2, 1750 * time.Millisecond, 2},
		{5 * time.Second, 5, 4500 * time.Millisecond, 5},
		{10 * time.Second, 10, 9 * time.Second, 10},
		{1500 * time.Millisecond, 2, 1250 * time.Millisecond, 2}, // etcd keeps it 2 s; we count on 1.5 s
		{5 * time.Second, 3, 2700 * time.Millisecond, 5},         // granted less than asked: trust the grant
		{2 * time.Second, 0, 1750 * time.Millisecond, 2},         // unknown grant: the configured TTL
	}
	for _, tc := range cases {
		if got := leaseTimes(tc.ttl, tc.granted); got != tc.window {
			t.Errorf("leaseTimes(%v, %d) = %v, want %v", tc.ttl, tc.granted, got, tc.window)
		}
		if got := ttlSeconds(tc.ttl); got != tc.seconds {
			t.Errorf("ttlSeconds(%v) = %d, want %d", tc.ttl, got, tc.seconds)
		}
	}
}

// TestNormalizeDefaults: zero fields get their defaults; the advertise URL loses a trailing slash.
func TestNormalizeDefaults(t *testing.T) {
	c, err := Config{Endpoints: []string{" 127.0.0.1:2379 ", ""}, Advertise: "https://node-1.example:8443/munin/", Schema: "v1", Secret: "x"}.normalize()
	if err != nil {
		t.Fatal(err)
	}
	if c.LeaseTTL != DefaultLeaseTTL || c.Prefix != DefaultPrefix || c.DialTimeout != DefaultDialTimeout || c.Logger == nil {
		t.Errorf("defaults not applied: %+v", c)
	}
	if c.Advertise != "https://node-1.example:8443/munin" || len(c.Endpoints) != 1 || c.Endpoints[0] != "127.0.0.1:2379" {
		t.Errorf("advertise %q endpoints %q", c.Advertise, c.Endpoints)
	}
}
