package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"munin/internal/mcpserver"
	"munin/internal/service"
)

// rememberOverMCP writes an entry the way an agent does: an MCP client
// calling remember over Streamable HTTP with its bearer key, against the same
// service the web UI reads.
func (u *ui) rememberOverMCP(t testing.TB, token, slug, content string) {
	t.Helper()
	mcpSrv := mcpserver.New(u.env.Svc, mcpserver.Options{})
	auth := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, err := u.env.Svc.Authenticate(r.Context(), strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		mcpSrv.HTTPHandler().ServeHTTP(w, r.WithContext(service.WithCaller(r.Context(), key)))
	})
	srv := httptest.NewServer(auth)
	defer srv.Close()

	ctx := context.Background()
	c, err := client.NewStreamableHttpClient(srv.URL+mcpserver.Endpoint,
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "web-test-agent", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "remember"
	req.Params.Arguments = map[string]any{"slug": slug, "content": content}
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError {
		t.Fatalf("remember %s over MCP: %v %+v", slug, err, res)
	}
}
