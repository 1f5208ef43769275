package replica

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fakeExe(t *testing.T, path string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho v0.0.1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// The binary is found in the documented order, without running go.
func TestBinaryLookup(t *testing.T) {
	dir := t.TempDir()
	onPath := fakeExe(t, filepath.Join(dir, "path", "litestream"))
	inGoBin := fakeExe(t, filepath.Join(dir, "gobin", "litestream"))
	inGoPath := fakeExe(t, filepath.Join(dir, "gopath", "bin", "litestream"))
	explicit := fakeExe(t, filepath.Join(dir, "explicit", "ls"))
	notExec := filepath.Join(dir, "plain")
	if err := os.WriteFile(notExec, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	cases := []struct {
		name, env, path, gobin, gopath, want, wantErr string
	}{
		{"env wins", explicit, filepath.Dir(onPath), "", "", explicit, ""},
		{"env not executable", notExec, filepath.Dir(onPath), "", "", "", "MUNIN_LITESTREAM"},
		{"PATH", "", filepath.Dir(onPath), filepath.Dir(inGoBin), "", onPath, ""},
		{"GOBIN", "", empty, filepath.Dir(inGoBin), filepath.Join(dir, "gopath"), inGoBin, ""},
		{"GOPATH", "", empty, "", filepath.Join(dir, "gopath") + string(os.PathListSeparator) + empty, inGoPath, ""},
		{"nowhere", "", empty, "", empty, "", InstallHint},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("MUNIN_LITESTREAM", c.env)
			t.Setenv("PATH", c.path)
			t.Setenv("GOBIN", c.gobin)
			t.Setenv("GOPATH", c.gopath)
			got, err := Binary()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Binary() = %q, %v; want error with %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Binary() = %q, %v; want %q", got, err, c.want)
			}
		})
	}
	t.Run("nowhere is ErrNoBinary", func(t *testing.T) {
		t.Setenv("MUNIN_LITESTREAM", "")
		t.Setenv("PATH", empty)
		t.Setenv("GOBIN", "")
		t.Setenv("GOPATH", empty)
		if _, err := Binary(); !errors.Is(err, ErrNoBinary) {
			t.Fatalf("err = %v", err)
		}
	})
}

// The installed binary is the pinned release; another one is named as such.
func TestCheckVersion(t *testing.T) {
	if err := CheckVersion(context.Background(), requireBinary(t)); err != nil {
		t.Fatal(err)
	}
	fake := fakeExe(t, filepath.Join(t.TempDir(), "litestream"))
	if err := CheckVersion(context.Background(), fake); err == nil || !strings.Contains(err.Error(), "v0.0.1") {
		t.Fatalf("fake binary: %v", err)
	}
}

func TestEpochURL(t *testing.T) {
	cases := []struct {
		base, ws string
		epoch    int64
		want     string
	}{
		{"file:///var/replica", "team-a", 2, "file:///var/replica/team-a/0000000000000002"},
		{"file:///var/replica/", "ws", 0x1f4, "file:///var/replica/ws/00000000000001f4"},
		{"s3://bucket/munin", "ws", 7, "s3://bucket/munin/ws/0000000000000007"},
		{"s3://bucket/munin?endpoint=http://127.0.0.1:9000&region=x", "ws", 7,
			"s3://bucket/munin/ws/0000000000000007?endpoint=http://127.0.0.1:9000&region=x"},
		{"s3://bucket", "a b", 1, "s3://bucket/a%20b/0000000000000001"},
	}
	for _, c := range cases {
		if got := EpochURL(c.base, c.ws, c.epoch); got != c.want {
			t.Errorf("EpochURL(%q, %q, %d) = %q, want %q", c.base, c.ws, c.epoch, got, c.want)
		}
	}
}

func TestCheckBaseURL(t *testing.T) {
	good := []string{"file:///var/replica", "s3://bucket", "s3://bucket/p?endpoint=http://x:9000"}
	bad := map[string]string{
		"file://relative/dir":          "absolute",
		"file:///d?x=1":                "absolute",
		"/var/replica":                 "scheme",
		"gs://bucket":                  "not supported",
		"s3:///nobucket":               "bucket",
		"s3://key:secret@bucket/p":     "credentials",
		"s3://bucket/p#frag":           "fragment",
		"file:///ok%zz":                "invalid",
		"http://example.com/replicas/": "not supported",
	}
	for _, u := range good {
		if err := CheckBaseURL(u); err != nil {
			t.Errorf("CheckBaseURL(%q) = %v", u, err)
		}
	}
	for u, want := range bad {
		if err := CheckBaseURL(u); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckBaseURL(%q) = %v, want an error with %q", u, err, want)
		}
	}
}
