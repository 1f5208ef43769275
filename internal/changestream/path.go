package changestream

import "strings"

// Suffix ends the path of every change stream: the REST API's
// /api/v1/changes/stream and the web UI's /w/{ws}/p/{p}/changes/stream.
const Suffix = "/changes/stream"

// IsPath reports whether path is a change stream's. The front door admits
// these requests as it does MCP's GET stream: long-lived and mostly idle,
// they count against their key's rate and the stream limits here, not
// against the server's requests in flight, and they end when it shuts down.
func IsPath(path string) bool {
	rest, ok := strings.CutSuffix(path, Suffix)
	if !ok {
		return false
	}
	if rest == "/api/v1" {
		return true
	}
	parts := strings.Split(rest, "/") // "", "w", ws, "p", p
	return len(parts) == 5 && parts[0] == "" && parts[1] == "w" && parts[2] != "" && parts[3] == "p" && parts[4] != ""
}
