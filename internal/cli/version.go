package cli

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"munin/internal/search"
	"munin/internal/store"
)

// version is Munin's version when the build sets it
// (-ldflags "-X munin/internal/cli.version=v1.2.3"); empty, munin version
// takes the module version and the VCS revision go build records.
var version string

// versionCmd prints what a bug report needs: Munin's version and revision,
// the Go version, and the versions of what Munin writes to disk (the
// schemas of the control and workspace files, the search index format).
func versionCmd(args []string, stdout io.Writer) error {
	if err := parseNoArgs(newFlagSet("version"), args); err != nil {
		return err
	}
	control, err := store.ControlSchemaVersion()
	if err != nil {
		return err
	}
	workspace, err := store.SchemaVersion()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "munin         %s\n", buildVersion())
	fmt.Fprintf(stdout, "go            %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(stdout, "schemas       %s %s\n", control, workspace)
	fmt.Fprintf(stdout, "index format  %d\n", search.IndexFormat)
	return nil
}

// buildVersion is version, else the main module's version from the build
// info with the VCS revision (and whether the tree had uncommitted changes);
// with -buildvcs=false, "(devel)".
func buildVersion() string {
	v := version
	info, ok := debug.ReadBuildInfo()
	if !ok {
		if v == "" {
			v = "unknown"
		}
		return v
	}
	if v == "" {
		v = info.Main.Version
	}
	if v == "" {
		v = "(devel)"
	}
	var rev, at, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	// Go 1.24 and later stamp a pseudo-version that already names the
	// revision ("v0.0.0-20261203092621-ce069846e1e8+dirty").
	if rev != "" && !strings.Contains(v, rev[:min(12, len(rev))]) {
		v += fmt.Sprintf(" (revision %.12s of %s%s)", rev, at, modified)
	}
	return v
}
