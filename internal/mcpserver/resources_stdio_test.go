package mcpserver

import (
	"context"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// TestResourcesOverStdio: over stdio resources/list and resources/read run
// under the session's keys, authenticated again for each request as tool
// calls are: once the key is revoked the list is empty and a read is
// refused naming the key, with nothing of the entry.
func TestResourcesOverStdio(t *testing.T) {
	env := servicetest.New(t, service.Options{})
	token, key := env.Key(t, "ws", "proj", "cli-agent", memory.RoleWrite)
	if _, err := env.Svc.Remember(context.Background(), key, service.RememberRequest{Slug: "notes/a", Content: "stdio body"}); err != nil {
		t.Fatal(err)
	}
	s := startStdio(t, New(env.Svc, Options{Logger: testLogger(t)}), token)

	const list = `{"jsonrpc":"2.0","id":1,"method":"resources/list"}`
	const read = `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"munin://ws/proj/notes/a"}}`
	s.send(t, list)
	if a := s.answer(t); !strings.Contains(a, `"uri":"munin://ws/proj"`) || !strings.Contains(a, `"uri":"munin://ws/proj/notes/a"`) {
		t.Errorf("resources/list: %s", a)
	}
	s.send(t, read)
	if a := s.answer(t); !strings.Contains(a, `"text":"stdio body"`) {
		t.Errorf("resources/read: %s", a)
	}

	if err := env.Store.RevokeKey(context.Background(), key.First().ID); err != nil {
		t.Fatal(err)
	}
	s.send(t, list)
	if a := s.answer(t); !strings.Contains(a, `"resources":[]`) {
		t.Errorf("resources/list after the revocation: %s, want no resources", a)
	}
	s.send(t, read)
	if a := s.answer(t); !strings.Contains(a, `"error"`) || !strings.Contains(a, "unauthorized: key") || strings.Contains(a, "stdio body") {
		t.Errorf("resources/read after the revocation: %s, want unauthorized naming the key", a)
	}
}
