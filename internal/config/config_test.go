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
