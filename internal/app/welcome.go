package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"munin/internal/service"
)

// Welcome runs the first start of an empty data directory: it creates
// default/default with its keys (service.BootstrapKeys) and prints them once
// to w for the server at base ("http://host:port"). On a data directory
// that holds a project it does nothing.
func (a *App) Welcome(ctx context.Context, w io.Writer, base string) error {
	keys, err := a.Svc.BootstrapKeys(ctx)
	if err != nil || keys.Project == "" {
		return err
	}
	PrintClientConfig(w, base, keys)
	return nil
}

// PrintClientConfig writes the first keys once: the server-admin key for the
// web UI and /metrics, and the admin key of default/default with a
// paste-ready client setup — the claude command line and the JSON block
// other MCP clients take.
func PrintClientConfig(w io.Writer, base string, keys service.FirstKeys) {
	url := base + "/mcp"
	cfg := map[string]any{
		"mcpServers": map[string]any{
			"munin": map[string]any{
				"type":    "http",
				"url":     url,
				"headers": map[string]string{"Authorization": "Bearer " + keys.Project},
			},
		},
	}
	block, _ := json.MarshalIndent(cfg, "", "  ")
	// The project key comes first, alone on its line: scripts (the crash
	// test among them) take the first key line as the key for the memory tools.
	fmt.Fprintf(w, `
Munin created the project %[1]s and two keys. Each is shown only this once;
store them like passwords.

Admin key of %[1]s, for your agents' memory tools and for that project's
keys, budget and logs:

  %[5]s

Connect Claude Code:

  claude mcp add --transport http munin %[4]s --header "Authorization: Bearer %[5]s"

Other MCP clients take this JSON:

%[6]s

Server-admin key: administers every project (the web UI at %[2]s/ —
projects, keys, budgets — and %[2]s/metrics) and reads no memory:

  %[3]s

`, service.DefaultProject, base, keys.ServerAdmin, url, keys.Project, block)
}
