package service_test

import (
	"sync"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// endpointHealth is a switchable Options.EmbedHealth.
type endpointHealth struct {
	mu      sync.Mutex
	failing bool
	reason  string
}

func (h *endpointHealth) set(failing bool, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failing, h.reason = failing, reason
}

func (h *endpointHealth) get() (bool, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failing, h.reason
}

// A project's summary says why meaning search is paused while the
// embedding endpoint fails, to every key that reads the project (the
// overview's rows and the settings included), and nothing once it answers
// again or when the server has no embeddings.
func TestSummaryCarriesEmbedFailure(t *testing.T) {
	const reason = "the embedding endpoint refuses Munin's key"
	h := &endpointHealth{}
	env := servicetest.New(t, service.Options{EmbedHealth: h.get})
	_, reader := env.Key(t, "acme", "alpha", "reader", memory.RoleRead)
	_, admin := env.Key(t, "acme", "alpha", "boss", memory.RoleAdmin)
	ref := memory.ProjectRef{Workspace: "acme", Project: "alpha"}

	check := func(when, want string) {
		t.Helper()
		sum, err := env.Svc.Project(ctx, reader, ref)
		if err != nil || sum.EmbedFailing != want {
			t.Errorf("%s: summary says %q (%v), want %q", when, sum.EmbedFailing, err, want)
		}
		rows, err := env.Svc.Projects(ctx, reader)
		if err != nil || len(rows) != 1 || rows[0].EmbedFailing != want {
			t.Errorf("%s: overview rows %+v (%v), want one saying %q", when, rows, err, want)
		}
		set, err := env.Svc.Settings(ctx, admin, ref)
		if err != nil || set.EmbedFailing != want {
			t.Errorf("%s: settings say %q (%v), want %q", when, set.EmbedFailing, err, want)
		}
	}
	check("endpoint answering", "")
	h.set(true, reason)
	check("endpoint failing", reason)
	h.set(true, "")
	check("endpoint failing without a reason", "the embedding endpoint fails")
	h.set(false, "")
	check("endpoint answering again", "")

	off := servicetest.New(t, service.Options{})
	_, c := off.Key(t, "acme", "alpha", "reader", memory.RoleRead)
	if sum, err := off.Svc.Project(ctx, c, ref); err != nil || sum.EmbedFailing != "" {
		t.Errorf("embeddings off: summary says %q (%v), want nothing", sum.EmbedFailing, err)
	}
}
