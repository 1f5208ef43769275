package cli

import (
	"os"
	"strings"
	"testing"

	"munin/internal/cluster/etcdtest"
	"munin/internal/config"
)

// TestClusterAdminNeedsNoSecret pins a decision (adminEtcd): key and
// project commands of a cluster work with access to etcd alone, without
// MUNIN_CLUSTER_SECRET — etcd access is the cluster's trust boundary.
func TestClusterAdminNeedsNoSecret(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	ep := etcd.Endpoint(0)
	secret, _ := config.Lookup("cluster-secret")
	t.Setenv(secret.Env, "")
	os.Unsetenv(secret.Env)
	if err, out := run(t, "key", "create", "--etcd", ep, "--workspace", "team", "--project", "notes", "--agent", "ci"); err != nil || !fullKey.MatchString(out) {
		t.Fatalf("key create --etcd without the secret: %v\n%s", err, out)
	}
	err, out := run(t, "key", "list", "--etcd", ep)
	if err != nil || !strings.Contains(out, "team/notes") || !strings.Contains(out, "ci") {
		t.Fatalf("key list --etcd without the secret: %v\n%s", err, out)
	}
	if err, out := run(t, "project", "list", "--etcd", ep); err != nil || !strings.Contains(out, "notes") {
		t.Fatalf("project list --etcd without the secret: %v\n%s", err, out)
	}
	err, out = run(t, "key", "--help")
	if err != nil || !strings.Contains(out, "needs no cluster secret") {
		t.Fatalf("key --help does not say the secret is not needed: %v\n%s", err, out)
	}
}
