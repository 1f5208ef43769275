package config

import (
	"bytes"
	"fmt"
	"strings"
)

// DocCommand regenerates docs/configuration.md; the file names it at its top.
const DocCommand = "go test ./internal/config -run TestConfigurationDoc -update"

// Markdown is docs/configuration.md: every setting by section — flag,
// environment variable, default and meaning — with the defaults of
// defaults (app.DefaultConfig: config does not own them).
func Markdown(defaults Config) []byte {
	var b bytes.Buffer
	b.WriteString(`# Configuration

_Generated from the declarations in ` + "`internal/config`" + ` by ` + "`" + DocCommand + "`" + `: change them there, not here._

Every setting of a Munin server is a flag of ` + "`munin serve`" + ` and an environment variable; a flag
given on the command line wins over its variable, and a variable whose value does not parse is an
error naming it, never a silent default. Secrets have no flag (a flag's value shows in ` + "`ps`" + `): they come
from the environment only. The other commands take the settings they need (` + "`--data`" + ` and
` + "`--synchronous`" + ` all of them): ` + "`munin COMMAND --help`" + ` lists a command's flags.

`)
	all := defaults.Settings()
	for _, sec := range Sections {
		fmt.Fprintf(&b, "## %s\n\n%s\n\n", sec.Name, sec.Doc)
		b.WriteString("| Flag | Environment | Default | Meaning |\n|---|---|---|---|\n")
		for _, s := range all {
			if s.Section != sec.Name {
				continue
			}
			flagCell, meaning := "`--"+s.Flag+"`", s.Help
			if s.Secret {
				flagCell = "— (environment only)"
			}
			if s.Note != "" {
				meaning += " (" + s.Note + ")"
			}
			def := "—"
			if v := s.Value(); v != "" && !s.Secret {
				def = "`" + v + "`"
			}
			fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", flagCell, s.Env, def, cell(meaning))
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

// cell is help text in a Markdown table cell: without the backquotes that
// name a flag's argument in --help (flag.UnquoteUsage), and with what would
// end the cell escaped.
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "`", ""), "|", `\|`)
}
