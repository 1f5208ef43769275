package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"munin/internal/config"
)

// synopses are the usage lines of each command, in the order the top-level
// help lists them; a command's --help starts with its own.
var synopses = []struct{ name, text string }{
	{"serve", `munin serve [flags]             serve MCP (/mcp), REST (/api/v1) and the web UI (plain
                                  "munin [flags]" serves too)`},
	{"stdio", `MUNIN_KEY=KEY[,KEY] munin stdio serve the MCP tools over stdin/stdout; one key per project, the first
                                  is the default (--key KEY, repeatable, shows keys in ps)`},
	{"key", `munin key create --workspace W --project P --agent NAME [--role read|propose|write|admin]
  munin key create --server-admin --agent NAME   a key that administers every project and reads no memory
  munin key list
  munin key revoke ID`},
	{"project", `munin project list
  munin project review W/P off|agents   whether the writes of W/P's write keys wait for review
                                  (propose keys always propose; admin keys write directly)
  munin project similar W/P on|off      whether remember warns when a new entry of W/P repeats
                                  an existing one (the similar hint; default on)`},
	{"backup", `munin backup DEST               online backup of every workspace into DEST (new or empty), verified`},
	{"export", `munin export W/P [--out FILE]   every version of a project as JSON Lines (default stdout)`},
	{"import", `munin import W/P [FILE]         read an export (default stdin) into W/P; idempotent; stop the server first`},
	{"reindex", `munin reindex [W/P]             build the search index of one or all projects and check it
  munin reindex --embeddings [W/P] --embed-url URL --embed-model M
                                  fill missing vectors of meaning search now; stop the server first`},
	{"version", `munin version                   Munin's version, the Go version, the schema and index format versions`},
	{"help", `munin help [COMMAND]            this list, or one command's flags (also: munin COMMAND --help)`},
}

// printUsage writes the top-level help: every command.
func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage:")
	for _, s := range synopses {
		fmt.Fprintln(w, "  "+s.text)
	}
	data, _ := config.Lookup("data")
	fmt.Fprintf(w, "Every command but version takes --data DIR (env %s, default %s);\n%q lists a command's flags.\n",
		data.Env, config.DefaultDataDir, "munin COMMAND --help")
}

// synopsis is the usage text of the command a flag set belongs to ("key
// create" belongs to key).
func synopsis(fsName string) string {
	cmd, _, _ := strings.Cut(fsName, " ")
	for _, s := range synopses {
		if s.name == cmd {
			return s.text
		}
	}
	return "munin " + fsName + " [flags]"
}

// isHelpFlag reports whether arg asks for help the way the flag package
// understands it.
func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "--h":
		return true
	}
	return false
}

// helpRequested is what the parse helpers return for -h or --help: Run
// prints the command's help to stdout and succeeds, as a user asking for
// help expects (the flag package alone prints to stderr and fails).
type helpRequested struct{ fs *flag.FlagSet }

func (h *helpRequested) Error() string { return h.fs.Name() + ": help requested" }

// Unwrap makes errors.Is(err, flag.ErrHelp) hold.
func (h *helpRequested) Unwrap() error { return flag.ErrHelp }

// print writes the command's usage lines and its flags: first its own,
// then the settings it takes, by section of internal/config.
func (h *helpRequested) print(w io.Writer) {
	fmt.Fprintf(w, "usage of munin %s:\n  %s\n", h.fs.Name(), synopsis(h.fs.Name()))
	groups := map[string]*flag.FlagSet{}
	h.fs.VisitAll(func(f *flag.Flag) {
		section := ""
		if s, ok := config.Lookup(f.Name); ok {
			section = s.Section
		}
		g := groups[section]
		if g == nil {
			g = newFlagSet(section)
			groups[section] = g
		}
		g.Var(f.Value, f.Name, f.Usage)
		g.Lookup(f.Name).DefValue = f.DefValue // the default, not what was parsed before --help
	})
	printGroup(w, "flags", groups[""])
	for _, sec := range config.Sections {
		printGroup(w, sec.Name+" settings", groups[sec.Name])
	}
}

// printGroup writes one group of flags under its title, if it has any.
func printGroup(w io.Writer, title string, fs *flag.FlagSet) {
	if fs == nil {
		return
	}
	fmt.Fprintf(w, "\n%s:\n", title)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// parseError turns what fs.Parse returned into the error a command
// returns: a help request as helpRequested, a bad flag with a pointer to
// the command's help (the flag package's own usage dump is silenced in
// newFlagSet, so one clear line reaches the user).
func parseError(fs *flag.FlagSet, err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return &helpRequested{fs: fs}
	}
	return fmt.Errorf("%w (munin %s --help lists its flags)", err, fs.Name())
}

// newFlagSet is a flag set that prints nothing itself: help and errors
// reach the user through Run (parseError).
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// helpFor answers a help request for a command with subcommands (munin key
// --help): the shared flags of all its subcommands.
func helpFor(fs *flag.FlagSet) error { return &helpRequested{fs: fs} }
