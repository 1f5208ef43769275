package httpserver

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"munin/internal/api"
	"munin/internal/memory"
	"munin/internal/service"
)

// readiness answers /readyz: ready while the databases answer and the
// server is not draining. A load balancer stops sending new work as soon as
// shutdown begins, while requests in flight still finish.
type readiness struct {
	svc      *service.Service
	draining atomic.Bool
}

func (rd *readiness) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if rd.draining.Load() {
		api.WriteError(w, memory.Errorf(memory.CodeUnavailable, "shutting down"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := rd.svc.Ready(ctx); err != nil {
		api.WriteError(w, memory.Errorf(memory.CodeUnavailable, "storage not ready"))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ready\n"))
}

// requireServerAdmin lets through the keys the service lets read the
// metrics (server-admin keys only).
func requireServerAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := service.CallerFrom(r.Context())
		if err == nil {
			err = service.ReadMetrics(c)
		}
		if err != nil {
			api.WriteError(w, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}
