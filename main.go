// Command munin is a memory server for teams of AI agents: MCP over
// Streamable HTTP (/mcp) or stdio, a REST API and a web UI, on embedded SQLite.
//
//	munin [serve]                 serve HTTP (the default)
//	munin stdio --key KEY         serve the MCP tools over stdin/stdout
//	munin key create --workspace W --project P --agent NAME [--role read|write|admin]
//	munin key list | munin key revoke ID
//	munin project list
//	munin backup DEST             online backup of every file, verified
//	munin export W/P [--out FILE] all versions of a project as JSON Lines
//	munin import W/P [FILE]       read an export back, idempotently
//	munin reindex [W/P]           build and check the search indexes
//	munin version                 version, Go version, schema and index format versions
//	munin help [COMMAND]          the commands, or one command's flags (munin COMMAND --help)
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"munin/internal/app"
	"munin/internal/cli"
)

func main() {
	app.PrivateFiles()
	if err := cli.Run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "munin:", err)
		}
		os.Exit(2)
	}
}
