package config_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"munin/internal/app"
	"munin/internal/config"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md from the declarations")

// TestConfigurationDoc: docs/configuration.md is what the declarations and
// app.DefaultConfig say; after a change, config.DocCommand rewrites it.
func TestConfigurationDoc(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "configuration.md")
	want := config.Markdown(app.DefaultConfig())
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; create it with: %s", err, config.DocCommand)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale; regenerate it with: %s", path, config.DocCommand)
	}
}
