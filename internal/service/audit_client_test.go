package service_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// TestWritesRecordClient: every write of a caller acting through an OAuth
// client (memory.Caller.WithClient) records the client beside the agent —
// remember, forget, restore, a proposal, an approval and a rejection (the
// reviewer's client) — and the audit log and the change feed show it; the
// same keys without a client record none.
func TestWritesRecordClient(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	_, alice := env.Key(t, "acme", "a", "alice", memory.RoleAdmin)
	_, pia := env.Key(t, "acme", "a", "pia", memory.RolePropose)
	claude := alice.WithClient("Claude")
	ref := memory.ProjectRef{Workspace: "acme", Project: "a"}
	heard := make(chan string, 16)
	stop, err := env.Svc.Watch(alice, ref, func(ev service.WatchEvent) {
		for _, c := range ev.Changes {
			heard <- c.Kind + ":" + c.Agent + ":" + c.Client
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	if _, err := env.Svc.Remember(ctx, claude, service.RememberRequest{Slug: "notes/x", Content: "one"}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Svc.Remember(ctx, alice, service.RememberRequest{Slug: "notes/x", Content: "two"}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Svc.Restore(ctx, claude, ref, "notes/x", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Svc.Forget(ctx, claude, service.ForgetRequest{Slug: "notes/x"}); err != nil {
		t.Fatal(err)
	}
	prop, err := env.Svc.Remember(ctx, pia.WithClient("ChatGPT"), service.RememberRequest{Slug: "notes/y", Content: "proposed"})
	if err != nil || prop.Proposal == "" {
		t.Fatalf("propose: %+v, %v", prop, err)
	}
	if _, err := env.Svc.Approve(ctx, claude, prop.Proposal, service.ApproveRequest{}); err != nil {
		t.Fatal(err)
	}
	drop, err := env.Svc.Remember(ctx, pia, service.RememberRequest{Slug: "notes/z", Content: "dropped"})
	if err != nil || drop.Proposal == "" {
		t.Fatalf("propose: %+v, %v", drop, err)
	}
	if _, err := env.Svc.Reject(ctx, claude, drop.Proposal, service.RejectRequest{Reason: "no"}); err != nil {
		t.Fatal(err)
	}

	want := []string{"remember:alice:Claude", "remember:alice:", "remember:alice:Claude", "forget:alice:Claude",
		"propose:pia:ChatGPT", "approve:alice:Claude", "propose:pia:", "reject:alice:Claude"}
	rows, err := env.Svc.AuditLog(ctx, alice, ref, memory.LogFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var audit []string
	for _, r := range slices.Backward(rows) {
		audit = append(audit, r.Action+":"+r.Agent+":"+r.Client)
	}
	if !slices.Equal(audit, want) {
		t.Errorf("audit log %q, want %q", audit, want)
	}
	res, err := env.Svc.Changes(ctx, alice, service.ChangesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var feed []string
	for _, c := range res.Changes {
		feed = append(feed, c.Kind+":"+c.Agent+":"+c.Client)
	}
	if !slices.Equal(feed, want) {
		t.Errorf("changes %q, want %q", feed, want)
	}
	// The live stream (Watch) shows the same, without the proposals and the
	// rejection, which change no entry.
	watchWant := slices.DeleteFunc(slices.Clone(want), func(s string) bool { return strings.HasPrefix(s, "propose:") || strings.HasPrefix(s, "reject:") })
	var watched []string
	timeout := time.After(10 * time.Second) // a bound on a hung hub, not a speed check
	for len(watched) < len(watchWant) {
		select {
		case c := <-heard:
			watched = append(watched, c)
		case <-timeout:
			t.Fatalf("watch heard %q, want %q", watched, watchWant)
		}
	}
	if !slices.Equal(watched, watchWant) {
		t.Errorf("watch heard %q, want %q", watched, watchWant)
	}
}
