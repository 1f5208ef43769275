package app

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"munin/internal/config"
	"munin/internal/embed/embedtest"
	"munin/internal/memory"
	"munin/internal/service"
)

// While the embedding endpoint refuses Munin's key (401, as after a token
// rotation), the project page tells a read key that meaning search is
// paused and why — and nothing of the endpoint's URL or of its answer,
// which quotes the entry's text; once the endpoint answers again (here a
// recall's query embedding), the notice is gone.
func TestProjectPageSaysWhenEndpointRefusesKey(t *testing.T) {
	ep := embedtest.New(8)
	t.Cleanup(ep.Close)
	ep.Fail(http.StatusUnauthorized)
	a, base, token := serveWith(t, Config{Config: config.Config{Embeddings: config.Embeddings{URL: ep.URL, Model: "m"}}, Logger: quietLog()})
	remember(t, a, mustKey(t, a, token), "rotation")
	for i := 0; !a.Embedder.Health().Failing; i++ {
		if i == 2000 {
			t.Fatalf("the client never noticed the 401: %+v", a.Embedder.Health())
		}
		time.Sleep(5 * time.Millisecond)
	}
	reader, _, err := a.Svc.CreateKey(context.Background(), service.DefaultProject, "reader", memory.RoleRead)
	if err != nil {
		t.Fatal(err)
	}
	const notice = `id="embed-failing" role="status">Meaning search paused: the embedding endpoint refuses Munin&#39;s key.`
	body := webGet(t, base, reader, "/w/default/p/default")
	if !strings.Contains(body, notice) {
		t.Fatalf("no notice that meaning search is paused:\n%s", body)
	}
	if strings.Contains(body, ep.URL) || strings.Contains(body, "cannot embed") {
		t.Fatalf("the page shows the endpoint's URL or answer:\n%s", body)
	}

	ep.SetMode(embedtest.OK)
	c := mustKey(t, a, reader)
	for i := 0; a.Embedder.Health().Failing; i++ {
		if i == 200 {
			t.Fatalf("recalls against an answering endpoint left it failing: %+v", a.Embedder.Health())
		}
		if _, err := a.Svc.Recall(context.Background(), c, service.RecallRequest{Query: "rotation"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if body := webGet(t, base, reader, "/w/default/p/default"); strings.Contains(body, "embed-failing") {
		t.Fatalf("the notice stays after the endpoint answers again:\n%s", body)
	}
}
