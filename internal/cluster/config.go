package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"
)

// Defaults used when a Config field is zero.
const (
	DefaultLeaseTTL    = 5 * time.Second
	DefaultPrefix      = "/munin"
	DefaultDialTimeout = 5 * time.Second
	// MinLeaseTTL is the shortest lease Join accepts: below it a keepalive every TTL/3 leaves no room for
	// one slow round trip, and etcd raises short TTLs anyway (to 1.5 × its election timeout).
	MinLeaseTTL = time.Second
	// minMargin is the least time by which this node considers its lease gone before etcd can expire it.
	minMargin = 250 * time.Millisecond
)

// Config says how a node joins a cluster.
type Config struct {
	// Endpoints are the etcd client URLs ("http://10.0.0.1:2379" or "10.0.0.1:2379").
	Endpoints []string
	// Advertise is this node's base URL as the other nodes reach it ("http://10.0.0.5:8080"). It is the
	// node's identity: two live nodes with the same URL are refused.
	Advertise string
	// LeaseTTL is how long the node's lease outlives its last keepalive, which bounds both how long a dead
	// owner blocks its workspaces and how soon a paused owner must stop writing. Default 5 s, at least 1 s;
	// etcd counts whole seconds, so it is rounded up for etcd and taken as given for validity.
	LeaseTTL time.Duration
	// Prefix is the etcd key prefix of this cluster (default "/munin").
	Prefix string
	// Schema is the storage schema/version string of this binary; every node of a cluster must agree.
	Schema string
	// Secret is the cluster secret nodes use to authenticate calls to each other. Only its SHA-256
	// fingerprint is stored in etcd; every node must have the same one.
	Secret string
	// DialTimeout bounds connecting to etcd at Join and each call Join makes (default 5 s).
	DialTimeout time.Duration
	// Logger receives membership events (default slog.Default()).
	Logger *slog.Logger
}

// normalize returns a copy with defaults filled in, or an error naming the first bad field.
func (c Config) normalize() (Config, error) {
	var eps []string
	for _, ep := range c.Endpoints {
		if ep = strings.TrimSpace(ep); ep != "" {
			eps = append(eps, ep)
		}
	}
	if len(eps) == 0 {
		return c, errors.New("cluster: no etcd endpoints given")
	}
	c.Endpoints = eps
	adv, err := normalizeAdvertise(c.Advertise)
	if err != nil {
		return c, err
	}
	c.Advertise = adv
	switch {
	case c.LeaseTTL == 0:
		c.LeaseTTL = DefaultLeaseTTL
	case c.LeaseTTL < MinLeaseTTL:
		return c, fmt.Errorf("cluster: lease TTL %v is below the minimum %v", c.LeaseTTL, MinLeaseTTL)
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if !strings.HasPrefix(c.Prefix, "/") || strings.HasSuffix(c.Prefix, "/") {
		return c, fmt.Errorf("cluster: etcd prefix %q must start with / and not end with /", c.Prefix)
	}
	if c.Schema == "" {
		return c, errors.New("cluster: no schema version given")
	}
	if c.Secret == "" {
		return c, errors.New("cluster: no cluster secret given (nodes authenticate each other with it)")
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// normalizeAdvertise accepts an absolute http(s) URL with a host and returns it without a trailing slash,
// so that "http://a:1/" and "http://a:1" are the same node.
func normalizeAdvertise(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("cluster: advertise URL %q must be an absolute http:// or https:// URL with a host (this node's base URL)", s)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u.String(), nil
}

// fingerprint is what etcd stores instead of the cluster secret.
func fingerprint(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// leaseTimes derives the etcd TTL in whole seconds (rounded up) and the validity window this node assumes
// after a keepalive's start: the configured TTL (never more than etcd granted) minus a safety margin of
// max(250 ms, TTL/10) for clock rate differences and the time the server takes to apply the keepalive.
func leaseTimes(ttl time.Duration, grantedSeconds int64) (window time.Duration) {
	if g := time.Duration(grantedSeconds) * time.Second; grantedSeconds > 0 && g < ttl {
		ttl = g
	}
	margin := max(minMargin, ttl/10)
	return ttl - margin
}

// ttlSeconds is the TTL etcd is asked for.
func ttlSeconds(ttl time.Duration) int64 {
	return int64((ttl + time.Second - 1) / time.Second)
}
