package replica

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// PinnedVersion is the Litestream release Munin is built and tested against.
// Litestream's internals change between releases (checkpointing, snapshots),
// so the cluster runs exactly this one; CheckVersion says when another is found.
const PinnedVersion = "v0.5.18"

// InstallHint says how to get the pinned binary; errors about a missing
// binary carry it.
const InstallHint = "go install github.com/benbjohnson/litestream/cmd/litestream@" + PinnedVersion

// ErrNoBinary means no litestream executable was found.
var ErrNoBinary = errors.New("litestream binary not found")

// Binary finds the litestream executable: $MUNIN_LITESTREAM if set, else
// `litestream` on PATH, else $GOBIN/litestream, else the first
// $GOPATH/bin/litestream (GOPATH defaulting to $HOME/go, as the go command
// does). It never runs `go`: a server must not depend on a toolchain.
func Binary() (string, error) {
	if p := os.Getenv("MUNIN_LITESTREAM"); p != "" {
		if err := checkExecutable(p); err != nil {
			return "", fmt.Errorf("MUNIN_LITESTREAM=%s: %w", p, err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("litestream"); err == nil {
		return p, nil
	}
	var tried []string
	for _, p := range goBinCandidates() {
		if checkExecutable(p) == nil {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", fmt.Errorf("%w (looked at $MUNIN_LITESTREAM, PATH, %s); install it with `%s`",
		ErrNoBinary, strings.Join(tried, ", "), InstallHint)
}

// goBinCandidates lists where `go install` puts binaries, without asking go.
func goBinCandidates() []string {
	var out []string
	if gobin := os.Getenv("GOBIN"); gobin != "" {
		out = append(out, filepath.Join(gobin, "litestream"))
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if home, err := os.UserHomeDir(); err == nil {
			gopath = filepath.Join(home, "go")
		}
	}
	if gopath != "" {
		first := filepath.SplitList(gopath)[0]
		out = append(out, filepath.Join(first, "bin", "litestream"))
	}
	return out
}

// checkExecutable reports whether p is a regular file with an execute bit.
func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("not an executable file")
	}
	return nil
}

// Version runs `litestream version` and returns what it prints (e.g. "v0.5.18").
func Version(ctx context.Context, binary string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "version").Output()
	if err != nil {
		return "", fmt.Errorf("%s version: %w", binary, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// CheckVersion returns an error unless binary is PinnedVersion.
func CheckVersion(ctx context.Context, binary string) error {
	v, err := Version(ctx, binary)
	if err != nil {
		return err
	}
	if v != PinnedVersion {
		return fmt.Errorf("%s is litestream %s, Munin needs %s (%s)", binary, v, PinnedVersion, InstallHint)
	}
	return nil
}
