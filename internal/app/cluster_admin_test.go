package app

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"

	"munin/internal/cluster/etcdtest"
	"munin/internal/memory"
	"munin/internal/service"
)

// The admin of a cluster (key and project commands with --etcd) serves what
// they need from etcd alone — keys created, listed, authenticated and
// revoked, projects listed — and every call that would need a workspace's
// data answers unavailable instead of reaching a store it does not have.
func TestClusterAdminServesControlData(t *testing.T) {
	etcd := etcdtest.Start(t, 1)
	cfg := Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cfg.Cluster.Etcd = etcd.Endpoints()
	a, err := OpenClusterAdmin(cfg)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = a.Close()
		}
	})
	ctx := context.Background()
	ref := memory.ProjectRef{Workspace: "team", Project: "notes"}

	token, key, err := a.Svc.CreateKey(ctx, ref, "ci", memory.RoleWrite)
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	if _, admin, err := a.Svc.CreateServerAdminKey(ctx, "ops"); err != nil || admin.Agent != "ops" {
		t.Fatalf("create server-admin key: %+v, %v", admin, err)
	}
	keys, err := a.Svc.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(keys, func(k memory.Key) bool { return k.ID == key.ID && k.Project == ref && !k.Revoked }) || len(keys) != 2 {
		t.Errorf("keys %+v, want ci's in %s and ops's", keys, ref)
	}
	projects, err := a.Svc.ListProjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(projects, func(p memory.ProjectInfo) bool { return p.Ref == ref }) {
		t.Errorf("projects %+v, want %s", projects, ref)
	}

	caller, err := a.Svc.AuthenticateMemory(ctx, token)
	if err != nil {
		t.Fatalf("authenticate the new key: %v", err)
	}
	if _, err := a.Svc.Remember(ctx, caller, service.RememberRequest{Slug: "a", Content: "x"}); memory.ErrorCode(err) != memory.CodeUnavailable {
		t.Errorf("remember through the admin: %v, want unavailable", err)
	}
	if _, err := a.Svc.Get(ctx, caller, service.GetRequest{Slug: "a"}); memory.ErrorCode(err) != memory.CodeUnavailable {
		t.Errorf("get through the admin: %v, want unavailable", err)
	}
	if _, err := a.Svc.Recall(ctx, caller, service.RecallRequest{Query: "x"}); memory.ErrorCode(err) != memory.CodeUnavailable {
		t.Errorf("recall through the admin: %v, want unavailable", err)
	}

	if err := a.Svc.RevokeKey(ctx, key.ID); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	if _, err := a.Svc.AuthenticateMemory(ctx, token); memory.ErrorCode(err) != memory.CodeUnauthorized {
		t.Errorf("a revoked key authenticates: %v", err)
	}
	closed = true
	if err := a.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}
