package service_test

import (
	"fmt"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// TestJoin: adding keys to a caller follows Authenticate's rules — a
// server-admin key stays alone, at most MaxCallerKeys projects, the higher
// role of two keys for one project counts.
func TestJoin(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	_, read := env.Key(t, "ws", "a", "r", memory.RoleRead)
	_, write := env.Key(t, "ws", "a", "w", memory.RoleWrite)
	_, other := env.Key(t, "ws", "b", "o", memory.RoleRead)
	_, admin := env.ServerAdmin(t, "ops")

	joined, err := service.Join(read, memory.NewCaller(append(write.Keys(), other.Keys()...)...))
	if err != nil {
		t.Fatal(err)
	}
	if k, _ := joined.KeyFor(read.First().Project); k.Role != memory.RoleWrite || len(joined.Keys()) != 2 {
		t.Fatalf("joined %v: want the write key for ws/a and ws/b", joined.Keys())
	}
	for name, pair := range map[string][2]memory.Caller{"admin joins": {read, admin}, "joins admin": {admin, read}} {
		if _, err := service.Join(pair[0], pair[1]); memory.ErrorCode(err) != memory.CodeInvalid {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
	if same, err := service.Join(admin, admin); err != nil || same.Owner() != admin.Owner() {
		t.Errorf("a server-admin session adding its own key: %v", err)
	}
	many := read
	for i := range memory.MaxCallerKeys - 1 {
		_, c := env.Key(t, "ws", fmt.Sprintf("p%d", i), "x", memory.RoleRead)
		if many, err = service.Join(many, c); err != nil {
			t.Fatalf("key %d: %v", i+2, err)
		}
	}
	if _, err := service.Join(many, other); memory.ErrorCode(err) != memory.CodeInvalid {
		t.Errorf("key %d: %v, want invalid", memory.MaxCallerKeys+1, err)
	}
}
