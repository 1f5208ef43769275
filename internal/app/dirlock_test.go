package app

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"munin/internal/config"
	"munin/internal/memory"
)

// TestOneProcessServesADataDirectory: a second server (or stdio process, or
// import) on the same data directory is refused with an error that says
// why, read-only commands still open it, and the claim ends with Close.
func TestOneProcessServesADataDirectory(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Config: config.Config{Storage: config.Storage{DataDir: dir}}, Exclusive: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	first, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Open(cfg)
	if err == nil {
		second.Close()
		first.Close()
		t.Fatal("a second exclusive Open of the same data directory succeeded")
	}
	if memory.ErrorCode(err) != memory.CodeConflict || !strings.Contains(err.Error(), "in use by another munin process") {
		t.Errorf("second Open: %v, want a conflict naming the other process", err)
	}

	shared := cfg
	shared.Exclusive = false
	reader, err := Open(shared)
	if err != nil {
		t.Fatalf("a read-only command could not open the served directory: %v", err)
	}
	if err := reader.Close(); err != nil {
		t.Fatal(err)
	}

	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(cfg)
	if err != nil {
		t.Fatalf("after Close the directory is still claimed: %v", err)
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
}
