package app

import (
	"encoding/json"
	"fmt"
	"io"
)

// PrintClientConfig writes the key once with a paste-ready client setup:
// the claude command line and the JSON block other MCP clients take.
func PrintClientConfig(w io.Writer, url, token string) {
	cfg := map[string]any{
		"mcpServers": map[string]any{
			"munin": map[string]any{
				"type":    "http",
				"url":     url,
				"headers": map[string]string{"Authorization": "Bearer " + token},
			},
		},
	}
	block, _ := json.MarshalIndent(cfg, "", "  ")
	fmt.Fprintf(w, `
Munin created the project default/default and an admin key for it.
The key is shown only this once; store it like a password:

  %s

Connect Claude Code:

  claude mcp add --transport http munin %s --header "Authorization: Bearer %s"

Other MCP clients take this JSON:

%s

`, token, url, token, block)
}
