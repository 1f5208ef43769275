package service_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// TestLogPageLimits: the service bounds the pages of the logs from the
// limits table, as it bounds list and history; the store's own cap is not
// the check.
func TestLogPageLimits(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	_, c := env.Key(t, "ws", "p", "reader", memory.RoleRead)
	ref := c.First().Project
	ctx := context.Background()
	for _, n := range []int{-1, memory.MaxHistoryLimit + 1} {
		f := memory.LogFilter{Limit: n}
		if _, err := env.Svc.AuditLog(ctx, c, ref, f); memory.ErrorCode(err) != memory.CodeInvalid || !strings.Contains(err.Error(), "limit") {
			t.Errorf("audit log limit %d: %v, want invalid naming limit", n, err)
		}
		if _, err := env.Svc.SearchLog(ctx, c, ref, f); memory.ErrorCode(err) != memory.CodeInvalid {
			t.Errorf("search log limit %d: %v, want invalid", n, err)
		}
	}
	if _, err := env.Svc.MissedQueries(ctx, c, ref, time.Time{}, memory.MaxMissedLimit+1); memory.ErrorCode(err) != memory.CodeInvalid {
		t.Errorf("missed queries over the limit: %v, want invalid", err)
	}
	if _, err := env.Svc.AuditLog(ctx, c, ref, memory.LogFilter{Limit: memory.MaxHistoryLimit}); err != nil {
		t.Errorf("audit log at the limit: %v", err)
	}
}

// TestAuditLogRefusesMisses: "misses only" is a filter of the search log;
// asked of the audit log it is invalid, not a database error (the store
// would build SQL over a column the audit log has not).
func TestAuditLogRefusesMisses(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	_, c := env.Key(t, "ws", "p", "reader", memory.RoleRead)
	_, err := env.Svc.AuditLog(context.Background(), c, c.First().Project, memory.LogFilter{MissesOnly: true})
	if memory.ErrorCode(err) != memory.CodeInvalid || !strings.Contains(err.Error(), "misses") {
		t.Fatalf("audit log with misses only: %v, want invalid naming misses", err)
	}
}
