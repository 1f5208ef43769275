package mcpserver

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestSubscribeWithMCPGoClient: mcp-go's own client hears of another key's
// write to the entry it subscribed to — in 2025-11-25 with Subscribe and
// its GET stream, in 2026-07-28 with ListenAsync — and once it lets go,
// the registry is empty.
func TestSubscribeWithMCPGoClient(t *testing.T) {
	const entry = "munin://ws/p/notes/client"
	for _, era := range []string{"2025-11-25", mcp.ProtocolVersion20260728} {
		t.Run(era, func(t *testing.T) {
			h := newSubHarness(t)
			opts := []transport.StreamableHTTPCOption{transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + h.tokA})}
			if era != mcp.ProtocolVersion20260728 {
				opts = append(opts, transport.WithContinuousListening()) // the GET stream
			}
			c, err := client.NewStreamableHttpClient(h.url, opts...)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan mcp.JSONRPCNotification, 16)
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				if n.Method == updated {
					got <- n
				}
			})
			// Started with a context that lasts: the client's GET stream
			// runs under it (initializeAs starts with a short one).
			if err := c.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			initializeAs(t, c, era)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var stop func()
			if era == mcp.ProtocolVersion20260728 {
				if stop, err = c.ListenAsync(ctx, mcp.SubscriptionFilter{ResourceSubscriptions: []string{entry}}, nil); err != nil {
					t.Fatal(err)
				}
			} else {
				if err := c.Subscribe(ctx, mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: entry}}); err != nil {
					t.Fatal(err)
				}
				// mcp-go's client sends its DELETE without the headers it
				// was given, so without the bearer: the gate refuses it and
				// the session would live until its idle expiry. End it here.
				sid := c.GetTransport().(*transport.StreamableHTTP).GetSessionId()
				stop = func() {
					if a := h.send(t, http.MethodDelete, h.tokA, sid, ""); a.code != http.StatusOK {
						t.Errorf("DELETE: %d %s", a.code, a.body)
					}
				}
			}
			h.allReady(t, 1)
			h.remember(t, h.w, "ws/p", "notes/client")
			select {
			case n := <-got:
				if n.Params.AdditionalFields["uri"] != entry {
					t.Errorf("updated %v, want uri %s", n.Params.AdditionalFields, entry)
				}
			case <-timeout():
				t.Fatalf("no notifications/resources/updated within 10 s: %+v", h.srv.SubscriptionStats())
			}
			stop()
			c.Close()
			h.registryEmpty(t)
		})
	}
}
