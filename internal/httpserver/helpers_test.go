package httpserver

import (
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/reqlog/logtest"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// logBuffer collects log lines written from many goroutines.
type logBuffer = logtest.Buffer

// stack is the server over the real service with fake inner handlers.
type stack struct {
	env   *servicetest.Env
	srv   *http.Server
	log   *logBuffer
	token string
	key   memory.Key // the first (only) key of token
	base  string     // set by serve
}

func newStack(t *testing.T, cfg Config, mcp, apiHandler http.Handler) *stack {
	t.Helper()
	env := servicetest.New(t, service.Options{})
	token, key := env.Key(t, "ws", "proj", "agent-1", memory.RoleWrite)
	lb := &logBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if mcp == nil {
		mcp = echoKey()
	}
	if apiHandler == nil {
		apiHandler = echoKey()
	}
	return &stack{env: env, srv: New(cfg, env.Svc, mcp, apiHandler), log: lb, token: token, key: key.First()}
}

// serve runs the server on a loopback port until the test ends.
func (s *stack) serve(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.base = "http://" + ln.Addr().String()
	done := make(chan struct{})
	go func() { defer close(done); _ = s.srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = s.srv.Close()
		<-done
	})
}

// echoKey is an inner handler that reports the caller it was given (its
// first key's agent and project, and all its projects) and the size of the
// body it could read.
func echoKey() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := service.CallerFrom(r.Context())
		if err != nil {
			http.Error(w, "no key", http.StatusTeapot)
			return
		}
		var n int64
		if r.Body != nil {
			buf := make([]byte, 32<<10)
			for {
				m, err := r.Body.Read(buf)
				n += int64(m)
				if err != nil {
					break
				}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		projects := []string{}
		for _, p := range c.Projects() {
			projects = append(projects, p.String())
		}
		key := c.First()
		_ = json.NewEncoder(w).Encode(map[string]any{"agent": key.Agent, "project": key.Project.String(), "projects": projects, "body": n, "te": r.TransferEncoding})
	})
}

func errorCode(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("not a JSON error body: %q (%v)", body, err)
	}
	return e.Error.Code
}

var client = &http.Client{Timeout: 10 * time.Second}
