package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// A replication mode other than sync or async, and a lease TTL below the
// minimum (1 s), are refused before the node starts, with a message that
// names the setting, what it must be and what was given, from the flag as
// from its environment variable. etcd is never asked (there is none here).
func TestClusterSettingsAreRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
		want []string
	}{
		{"replication flag", []string{"--replication", "bogus"}, nil,
			[]string{"--replication", "sync or async", `"bogus"`}},
		{"replication env", nil, map[string]string{"MUNIN_REPLICATION": "bogus"},
			[]string{"--replication", "sync or async", `"bogus"`}},
		{"replication in a cluster", []string{"--cluster", "--replication", "SYNC"}, nil,
			[]string{"--replication", "sync or async", `"SYNC"`}},
		{"lease-ttl flag", []string{"--cluster", "--lease-ttl", "500ms"}, nil,
			[]string{"--lease-ttl", "at least 1s", "500ms"}},
		{"lease-ttl env", []string{"--cluster"}, map[string]string{"MUNIN_LEASE_TTL": "999ms"},
			[]string{"--lease-ttl", "at least 1s", "999ms"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Everything else a node needs is there: the setting is what is refused.
			t.Setenv("MUNIN_CLUSTER_SECRET", "cli-test-cluster-secret")
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			args := append([]string{"serve", "--data", filepath.Join(t.TempDir(), "d"), "--addr", "127.0.0.1:0",
				"--etcd", "http://127.0.0.1:1", "--advertise", "http://127.0.0.1:2", "--replica", "file://" + t.TempDir()}, c.args...)
			err := refused(t, args...)
			if err == nil {
				t.Fatalf("serve %v started", c.args)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("serve %v: %q, want it to name %s", c.args, err, w)
				}
			}
		})
	}
}
