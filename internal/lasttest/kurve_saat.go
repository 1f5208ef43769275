//go:build last

// The curve's data directories: written in this process with this tree's
// code, as munin import and munin key create would (one process instead of
// one per project and key: a thousand projects would otherwise take many
// minutes of process starts), then served by munin as its own process.

package lasttest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"munin/internal/app"
	"munin/internal/config"
	"munin/internal/memory"
	"munin/internal/portable"
	"munin/internal/store"
)

// saatProjekt is one project to write: its entries and the agents that get
// a write key; read adds one read key.
type saatProjekt struct {
	ref     memory.ProjectRef
	lines   func(emit func(portable.Line))
	agents  []string
	read    bool
	tokens  []string // filled by saen: the agents' keys
	checker string   // filled by saen: the read key
}

// saen writes the projects and their keys into dir.
func saen(t testing.TB, dir string, projects []*saatProjekt) {
	ctx := context.Background()
	a, err := app.Open(app.Config{Config: config.Config{Storage: config.Storage{DataDir: dir, Synchronous: "NORMAL"}},
		Exclusive: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	for _, p := range projects {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		p.lines(func(l portable.Line) {
			if err := enc.Encode(l); err != nil {
				t.Fatal(err)
			}
		})
		if _, err := portable.Import(ctx, a.Store, p.ref, &buf, portable.ImportOptions{}); err != nil {
			t.Fatalf("%s einspielen: %v", p.ref, err)
		}
		for _, name := range p.agents {
			tok, _, err := a.Svc.CreateKey(ctx, p.ref, name, memory.RoleWrite)
			if err != nil {
				t.Fatal(err)
			}
			p.tokens = append(p.tokens, tok)
		}
		if p.read {
			if p.checker, _, err = a.Svc.CreateKey(ctx, p.ref, "pruefer", memory.RoleRead); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// mischProjekt is the load test's one project: -last.eintraege entries as
// its seed writes them, a key for each of n agents and a read key.
func mischProjekt(n int) *saatProjekt {
	p := &saatProjekt{ref: memory.ProjectRef{Workspace: "bereich", Project: "p"}, read: true}
	for i := range n {
		p.agents = append(p.agents, agentName(i))
	}
	base := time.Now().UTC().Add(-time.Duration(*lastEintraege) * time.Second)
	p.lines = func(emit func(portable.Line)) {
		for i := range *lastEintraege {
			content, tag := seedContent(i)
			emit(portable.Line{Slug: seededSlug(i), Version: 1, Content: content, Tags: []string{tag}, Agent: "saat",
				CreatedAt: base.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano)})
		}
	}
	return p
}

// copyDir copies the regular files under src into the new directory dst:
// a fresh server per round starts from the same data.
func copyDir(t testing.TB, src, dst string) {
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o700)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o600)
	})
	if err != nil {
		t.Fatalf("Datenverzeichnis kopieren: %v", err)
	}
}

// sameSchemas fails the test unless bin reads the data this tree writes:
// munin version must name the schemas of this tree's store.
func sameSchemas(t testing.TB, bin string) {
	control, err := store.ControlSchemaVersion()
	if err != nil {
		t.Fatal(err)
	}
	workspace, err := store.SchemaVersion()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", bin, err)
	}
	want := fmt.Sprintf("%s %s", control, workspace)
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "schemas"); ok && strings.TrimSpace(rest) == want {
			return
		}
	}
	t.Fatalf("%s: munin version nennt nicht die Schemas %q dieses Stands, die Daten dieses Stands passen nicht zu ihm:\n%s", bin, want, out)
}
