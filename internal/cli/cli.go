// Package cli is Munin's command line: serve, stdio, key and project
// administration, backup, export, import and reindex. main.go only calls Run.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"munin/internal/app"
	"munin/internal/config"
)

// Run runs the command line args (without the program name). Help (munin
// help, -h, --help, also after a command) goes to stdout and is no error.
func Run(args []string, stdout, stderr io.Writer) error {
	err := dispatch(args, stdout, stderr)
	if h := (*helpRequested)(nil); errors.As(err, &h) {
		h.print(stdout)
		return nil
	}
	return err
}

// dispatch runs the command args names (serve when args start with a flag).
func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && isHelpFlag(args[0]) {
		printUsage(stdout)
		return nil
	}
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(args, stdout, stderr)
	case "stdio":
		return stdio(args, os.Stdin, stdout, stderr)
	case "key":
		return keyCmd(args, stdout, stderr)
	case "project":
		return projectCmd(args, stdout, stderr)
	case "backup", "export", "import", "reindex":
		return portableCmd(cmd, args, stdout, stderr)
	case "version":
		return versionCmd(args, stdout)
	case "help":
		if len(args) == 0 {
			printUsage(stdout)
			return nil
		}
		if args[0] == "help" || isHelpFlag(args[0]) {
			return fmt.Errorf("munin help takes a command name, got %q", args[0])
		}
		return dispatch(append(args[:1:1], "--help"), stdout, stderr)
	}
	return fmt.Errorf("unknown command %q (munin help lists the commands)", cmd)
}

// newFlags declares the flags every command shares (--data and
// --synchronous) and the settings named in more, bound to cfg.
func newFlags(name string, cfg *app.Config, more ...string) *flag.FlagSet {
	fs := newFlagSet(name)
	bindSettings(fs, cfg, append([]string{"data", "synchronous"}, more...)...)
	return fs
}

// bindSettings declares the named settings (internal/config) as flags of
// fs bound to cfg's fields, each set to its default (app.DefaultConfig)
// first, which the flag shows in --help; a secret has no flag and is read
// from its environment variable now. Settings not named keep cfg's values
// (zero: the packages' defaults). A name that is no setting is a mistake
// in this package, so it panics.
func bindSettings(fs *flag.FlagSet, cfg *app.Config, names ...string) {
	all := cfg.Settings()
	defaults := app.DefaultConfig()
	defs := defaults.Settings()
	for _, name := range names {
		i := slices.IndexFunc(all, func(s config.Setting) bool { return s.Flag == name })
		if i < 0 {
			panic("cli: no setting " + name)
		}
		all[i].SetDefault(defs[i])
		if all[i].Secret {
			all[i].LoadSecret()
			continue
		}
		all[i].Register(fs)
	}
}

// everySetting names every setting declared in internal/config.
func everySetting() []string {
	var names []string
	for _, s := range new(config.Config).Settings() {
		names = append(names, s.Flag)
	}
	return names
}

// parseNoArgs parses flags (and their environment variables) of a command
// that takes no positional arguments.
func parseNoArgs(fs *flag.FlagSet, args []string) error {
	pos, err := parseInterspersed(fs, args)
	if err == nil && len(pos) > 0 {
		err = fmt.Errorf("%s takes no arguments, got %q", fs.Name(), pos)
	}
	return err
}

// parseInterspersed parses flags that may follow positional arguments and
// returns the positional ones; then it applies the environment (applyEnv).
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, parseError(fs, err)
		}
		if fs.NArg() == 0 {
			return pos, applyEnv(fs)
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// stdioKeyEnv holds munin stdio's keys: a command's parameter, not a
// server setting, so it is declared here and not in internal/config.
const stdioKeyEnv = "MUNIN_KEY"

// envOf names the environment variable of a flag: a setting's, declared
// beside it in internal/config, or stdio's --key.
func envOf(flag string) (string, bool) {
	if flag == "key" {
		return stdioKeyEnv, true
	}
	return config.EnvOf(flag)
}

// applyEnv gives every flag not set on the command line the value of its
// environment variable, parsed as the flag would parse it: a value that does
// not parse is an error naming the variable, never a silent default.
func applyEnv(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		name, ok := envOf(f.Name)
		if !ok || set[f.Name] {
			return
		}
		if v, ok := os.LookupEnv(name); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %v", name, v, err))
			}
		}
	})
	return errors.Join(errs...)
}

// untilSignal returns a context that ends with the first SIGINT or SIGTERM;
// after it, the signals get their default effect again, so a second one
// ends the process at once.
func untilSignal() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }()
	return ctx, stop
}
