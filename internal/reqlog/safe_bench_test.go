package reqlog

import (
	"io"
	"log/slog"
	"testing"
)

// BenchmarkRequestLine measures one request-log line (the attributes the
// front door writes) through a text handler, bare and under Safe.
func BenchmarkRequestLine(b *testing.B) {
	for name, h := range map[string]slog.Handler{
		"text": slog.NewTextHandler(io.Discard, nil),
		"safe": Safe(slog.NewTextHandler(io.Discard, nil)),
	} {
		b.Run(name, func(b *testing.B) {
			log := slog.New(h)
			b.ReportAllocs()
			for b.Loop() {
				log.Info("http request", "method", "POST", "path", "/w/team/notes/decisions/db-choice", "status", 200,
					"duration_ms", 1.25, "bytes", 512, "remote", "127.0.0.1:50312", "agent", "claude", "project", "team/notes")
			}
		})
	}
}
