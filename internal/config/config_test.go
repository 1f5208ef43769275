package config

import (
	"flag"
	"reflect"
	"strings"
	"testing"
)

// TestEverySettingDeclaredOnce: each field of each section is bound by
// exactly one declaration (SessionOpenRate, documented as flagless, aside),
// and flags and variables are unique, so a field added without its flag,
// or a flag name reused, fails here rather than in an operator's script.
func TestEverySettingDeclaredOnce(t *testing.T) {
	var c Config
	all := c.Settings()
	bound := map[any]string{}
	flags, envs := map[string]bool{}, map[string]bool{}
	for _, s := range all {
		if s.Section == "" || s.Flag == "" || s.Help == "" || !strings.HasPrefix(s.Env, "MUNIN_") {
			t.Errorf("incomplete declaration: %+v", s)
		}
		if flags[s.Flag] || envs[s.Env] {
			t.Errorf("%s / %s declared twice", s.Flag, s.Env)
		}
		flags[s.Flag], envs[s.Env] = true, true
		ptr := reflect.ValueOf(s.field).Pointer()
		if other, ok := bound[ptr]; ok {
			t.Errorf("%s and %s bind the same field", s.Flag, other)
		}
		bound[ptr] = s.Flag
		if s.Secret {
			if a, ok := Lookup(s.Anchor); !ok || a.Secret {
				t.Errorf("secret %s is anchored to %q, which is no flag", s.Flag, s.Anchor)
			}
		}
	}
	sections := reflect.ValueOf(&c).Elem()
	if sections.NumField() != len(Sections) {
		t.Errorf("Config has %d sections, Sections lists %d", sections.NumField(), len(Sections))
	}
	for i := range sections.NumField() {
		sec := sections.Field(i)
		if want := strings.ToLower(sections.Type().Field(i).Name); Sections[i].Name != want {
			t.Errorf("section %d is %s, Sections names it %s", i, want, Sections[i].Name)
		}
		for j := range sec.NumField() {
			name := sec.Type().Field(j).Name
			if _, ok := bound[sec.Field(j).Addr().Pointer()]; !ok && name != "SessionOpenRate" {
				t.Errorf("%s.%s has no declaration", sections.Type().Field(i).Name, name)
			}
		}
	}
}

// TestFlagsAndEnvBindFields: a registered flag writes its field, a secret
// is read from its variable only, and EnvOf answers from the declarations.
func TestFlagsAndEnvBindFields(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	for _, s := range c.Settings() {
		s.Register(fs)
	}
	if fs.Lookup("embed-key") != nil || fs.Lookup("cluster-secret") != nil {
		t.Fatal("a secret became a flag")
	}
	err := fs.Parse([]string{"--addr", "h:1", "--etcd", " http://a:1 ,,http://b:2", "--replication", "async",
		"--max-inflight", "-1", "--index-wait", "3s", "--recall-rate", "2.5", "--budget-off"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Addr != "h:1" || !reflect.DeepEqual(c.Cluster.Etcd, []string{"http://a:1", "http://b:2"}) || !c.Cluster.Async ||
		c.Limits.MaxInFlight != -1 || c.Search.IndexWait.String() != "3s" || c.Limits.RecallRate != 2.5 || !c.Limits.BudgetOff {
		t.Fatalf("flags did not reach their fields: %+v", c)
	}
	if err := fs.Set("replication", "SYNC"); err == nil || !strings.Contains(err.Error(), "sync or async") {
		t.Errorf("--replication SYNC: %v, want refused", err)
	}
	t.Setenv("MUNIN_EMBED_KEY", "k")
	for _, s := range c.Settings() {
		if s.Secret {
			s.LoadSecret()
		}
	}
	if c.Embeddings.Key != "k" || c.Cluster.Secret != "" {
		t.Errorf("secrets: embed key %q, cluster secret %q", c.Embeddings.Key, c.Cluster.Secret)
	}
	if env, ok := EnvOf("max-inflight-per-key"); !ok || env != "MUNIN_MAX_INFLIGHT_PER_KEY" {
		t.Errorf("EnvOf(max-inflight-per-key) = %q, %v", env, ok)
	}
	if _, ok := EnvOf("embed-key"); ok {
		t.Error("EnvOf names a secret's variable for a flag")
	}
	if u := (Setting{Flag: "x", Env: "MUNIN_X", Help: "h", Note: "-1: no limit"}).Usage(); u != "h (env MUNIN_X; -1: no limit)" {
		t.Errorf("usage %q", u)
	}
	if u, _ := Lookup("embed-url"); !strings.Contains(u.Usage(), "bearer token from env MUNIN_EMBED_KEY") {
		t.Errorf("embed-url's help does not name the key's variable: %q", u.Usage())
	}
}

// TestFlagAndEnvNamesKept pins every flag and variable name as scripts, CI
// and the load and cluster tests use them: a rename fails here.
func TestFlagAndEnvNamesKept(t *testing.T) {
	want := map[string]string{
		"data": "MUNIN_DATA", "synchronous": "MUNIN_SYNCHRONOUS", "latest-cache-bytes": "MUNIN_LATEST_CACHE_BYTES", "addr": "MUNIN_ADDR",
		"allowed-origins": "MUNIN_ALLOWED_ORIGINS", "trusted-proxies": "MUNIN_TRUSTED_PROXIES", "public-url": "MUNIN_PUBLIC_URL", "oauth-clients": "MUNIN_OAUTH_CLIENTS", "write-budget": "MUNIN_WRITE_BUDGET",
		"budget-off": "MUNIN_BUDGET_OFF", "max-content": "MUNIN_MAX_CONTENT",
		"max-inflight": "MUNIN_MAX_INFLIGHT", "max-inflight-per-key": "MUNIN_MAX_INFLIGHT_PER_KEY",
		"rate-per-key": "MUNIN_RATE_PER_KEY", "session-idle-ttl": "MUNIN_SESSION_IDLE_TTL",
		"search-log-off": "MUNIN_SEARCH_LOG_OFF", "recall-exact": "MUNIN_RECALL_EXACT", "similar-off": "MUNIN_SIMILAR_OFF",
		"search-log-days": "MUNIN_SEARCH_LOG_DAYS", "search-log-rows": "MUNIN_SEARCH_LOG_ROWS",
		"recall-rate": "MUNIN_RECALL_RATE", "recall-burst": "MUNIN_RECALL_BURST",
		"recall-concurrency": "MUNIN_RECALL_CONCURRENCY",
		"max-sessions":       "MUNIN_MAX_SESSIONS", "max-sessions-per-key": "MUNIN_MAX_SESSIONS_PER_KEY",
		"max-streams-per-key": "MUNIN_MAX_STREAMS_PER_KEY",
		"write-budget-bytes":  "MUNIN_WRITE_BUDGET_BYTES", "index-wait": "MUNIN_INDEX_WAIT",
		"index-idle": "MUNIN_INDEX_IDLE", "index-max-open": "MUNIN_INDEX_MAX_OPEN", "embed-url": "MUNIN_EMBED_URL", "embed-model": "MUNIN_EMBED_MODEL",
		"embed-similar-min": "MUNIN_EMBED_SIMILAR_MIN",
		"cluster":           "MUNIN_CLUSTER", "etcd": "MUNIN_ETCD", "etcd-prefix": "MUNIN_ETCD_PREFIX",
		"advertise": "MUNIN_ADVERTISE", "replica": "MUNIN_REPLICA", "lease-ttl": "MUNIN_LEASE_TTL",
		"replication": "MUNIN_REPLICATION", "replica-lag-max": "MUNIN_REPLICA_LAG_MAX", "litestream": "MUNIN_LITESTREAM",
	}
	secrets := map[string]bool{"MUNIN_EMBED_KEY": true, "MUNIN_CLUSTER_SECRET": true}
	var c Config
	n := 0
	for _, s := range c.Settings() {
		if s.Secret {
			if !secrets[s.Env] {
				t.Errorf("unknown secret %s", s.Env)
			}
			continue
		}
		n++
		if env, ok := want[s.Flag]; !ok || env != s.Env {
			t.Errorf("--%s is %s, want %q", s.Flag, s.Env, env)
		}
	}
	if n != len(want) {
		t.Errorf("%d flags declared, want the %d there were", n, len(want))
	}
}
