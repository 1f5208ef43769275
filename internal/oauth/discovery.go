package oauth

import "net/http"

// Resource is one protected resource the discovery documents describe.
type Resource struct {
	Path string // e.g. "/mcp"
	Name string // shown by clients, e.g. "Munin MCP"
}

// Discovery serves the well-known documents: the authorization server's,
// and each resource's at WellKnownResource+path. The first resource is
// also served at WellKnownResource itself, where a client that finds no
// path-suffixed document looks last (MCP authorization, 2025-11-25).
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
	for i, res := range resources {
		doc := c.ResourceMetadataFor(res.Path, res.Name)
		get(WellKnownResource+res.Path, doc)
		if i == 0 {
			get(WellKnownResource, doc)
		}
	}
	return mux
}
