package oauth

import "net/http"

// Resource is one protected resource the discovery documents describe.
type Resource struct {
	Path string // e.g. "/mcp"
	Name string // shown by clients, e.g. "Munin MCP"
}

// Discovery serves the well-known documents: the authorization server's,
// and each resource's at WellKnownResource+path. Nothing is served at
// WellKnownResource itself: a client looks there only after the 401's
// resource_metadata and the path-suffixed document (MCP authorization,
// 2025-11-25), and a root document would name /mcp to a client of the
// key-only endpoint, which must learn of no OAuth at all.
func Discovery(c Config, resources ...Resource) http.Handler {
	mux := http.NewServeMux()
	get := func(path string, doc any) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				http.Error(w, "method not allowed: discovery documents are read with GET", http.StatusMethodNotAllowed)
				return
			}
			writeJSON(w, doc)
		})
	}
	get(WellKnownServer, c.ServerMetadataDoc())
	for _, res := range resources {
		get(WellKnownResource+res.Path, c.ResourceMetadataFor(res.Path, res.Name))
	}
	return mux
}
