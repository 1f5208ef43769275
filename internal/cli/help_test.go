package cli

import (
	"bytes"
	"strings"
	"testing"

	"munin/internal/config"
)

// commandNames are the commands the top-level help must list.
var commandNames = []string{"serve", "stdio", "key", "project", "backup", "export", "import", "reindex", "version"}

// TestTopLevelHelp: munin --help, -h and help print the list of commands to
// stdout and succeed (exit status 0); nothing goes to stderr.
func TestTopLevelHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"-help"}, {"help"}} {
		var stdout, stderr bytes.Buffer
		if err := Run(args, &stdout, &stderr); err != nil {
			t.Errorf("munin %v: %v, want success", args, err)
		}
		for _, name := range commandNames {
			if !strings.Contains(stdout.String(), "munin "+name) {
				t.Errorf("munin %v: help does not list %q:\n%s", args, name, stdout.String())
			}
		}
		if stderr.Len() > 0 {
			t.Errorf("munin %v wrote to stderr: %s", args, stderr.String())
		}
	}
}

// TestCommandHelp: munin <command> --help prints that command's flags to
// stdout and succeeds; the server's flags no longer answer for the others.
func TestCommandHelp(t *testing.T) {
	for _, c := range []struct {
		args  []string
		flags []string
	}{
		{[]string{"serve", "--help"}, []string{"-addr", "-max-inflight", "-data"}},
		{[]string{"stdio", "-h"}, []string{"-key", "-data"}},
		{[]string{"key", "--help"}, []string{"-agent", "-role", "-server-admin", "-etcd"}},
		{[]string{"key", "create", "--help"}, []string{"-agent", "-role"}},
		{[]string{"project", "list", "-h"}, []string{"-etcd", "-data"}},
		{[]string{"project", "--help"}, []string{"-etcd"}},
		{[]string{"backup", "--help"}, []string{"-data"}},
		{[]string{"export", "--help"}, []string{"-out"}},
		{[]string{"import", "--help"}, []string{"-max-content"}},
		{[]string{"reindex", "--help"}, []string{"-embeddings", "-embed-url"}},
		{[]string{"version", "--help"}, nil},
		{[]string{"help", "export"}, []string{"-out"}},
	} {
		var stdout, stderr bytes.Buffer
		if err := Run(c.args, &stdout, &stderr); err != nil {
			t.Errorf("munin %v: %v, want success", c.args, err)
			continue
		}
		out := stdout.String()
		if !strings.Contains(out, "usage of munin "+c.args[0]) && !strings.Contains(out, "usage of munin "+c.args[len(c.args)-1]) {
			t.Errorf("munin %v: no usage line:\n%s", c.args, out)
		}
		for _, f := range c.flags {
			if !strings.Contains(out, f) {
				t.Errorf("munin %v: flag %s not listed:\n%s", c.args, f, out)
			}
		}
		if stderr.Len() > 0 {
			t.Errorf("munin %v wrote to stderr: %s", c.args, stderr.String())
		}
	}
}

// TestUnknownCommandAndFlag: a mistyped command or flag is an error (exit
// status 2 in main) that names it and says where the help is.
func TestUnknownCommandAndFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"srve"}, []string{`"srve"`, "munin help"}},
		{[]string{"serve", "--adr", "x"}, []string{"-adr", "munin serve --help"}},
		{[]string{"key", "create", "--agnt", "x"}, []string{"-agnt", "munin key create --help"}},
		{[]string{"key", "rotate"}, []string{"create, list or revoke"}},
	} {
		var stdout, stderr bytes.Buffer
		err := Run(c.args, &stdout, &stderr)
		if err == nil {
			t.Errorf("munin %v succeeded", c.args)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("munin %v: %q, want it to name %s", c.args, err, w)
			}
		}
		if stdout.Len() > 0 {
			t.Errorf("munin %v wrote to stdout: %s", c.args, stdout.String())
		}
	}
}

// TestServeHelpShowsEverySetting: munin serve takes every setting declared
// in internal/config, and its help — generated from the declarations — names
// each flag with its variable under its section, and each secret's variable.
func TestServeHelpShowsEverySetting(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := Run([]string{"serve", "--help"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	out := stdout.String()
	var cfg config.Config
	for _, s := range cfg.Settings() {
		if !strings.Contains(out, s.Env) {
			t.Errorf("serve --help does not name %s", s.Env)
		}
		if s.Secret {
			if strings.Contains(out, "-"+s.Flag+" ") {
				t.Errorf("serve --help offers the secret %s as a flag", s.Env)
			}
			continue
		}
		section := strings.Index(out, "\n"+s.Section+" settings:\n")
		at := strings.Index(out, "  -"+s.Flag+" ")
		if at < 0 {
			at = strings.Index(out, "  -"+s.Flag+"\n")
		}
		if section < 0 || at < section {
			t.Errorf("serve --help does not list -%s under %s settings", s.Flag, s.Section)
		}
	}
}
