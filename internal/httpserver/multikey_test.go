package httpserver

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"munin/internal/api"
	"munin/internal/memory"
)

// TestKeyListWorksForAPIAndMCP: "Authorization: Bearer A,B" is one caller
// holding both keys, on /api/v1 and on /mcp alike; spaces around the commas
// and a repeated key change nothing; the first key is the default project.
func TestKeyListWorksForAPIAndMCP(t *testing.T) {
	s := newFullStack(t, Config{})
	s.serve(t)
	a, _ := s.env.Key(t, "team", "backend", "agent-a", memory.RoleWrite)
	b, _ := s.env.Key(t, "team", "shared", "agent-b", memory.RoleRead)
	accessA := `{"project":"team/backend","role":"write","agent":"agent-a"}`
	accessB := `{"project":"team/shared","role":"read","agent":"agent-b"}`
	for _, tc := range []struct{ name, auth, me string }{
		{"one key", bearer(a), `{"projects":[` + accessA + `]}`},
		{"two keys", bearer(a, b), `{"projects":[` + accessA + `,` + accessB + `]}`},
		{"the other order", bearer(b, a), `{"projects":[` + accessB + `,` + accessA + `]}`},
		{"spaces around commas", "Bearer   " + a + " ,  " + b + "  ", `{"projects":[` + accessA + `,` + accessB + `]}`},
		{"tabs around commas", "Bearer " + a + "\t,\t" + b, `{"projects":[` + accessA + `,` + accessB + `]}`},
		{"a repeated key", bearer(a, b, a, b), `{"projects":[` + accessA + `,` + accessB + `]}`},
		{"lowercase scheme", "bearer " + a + "," + b, `{"projects":[` + accessA + `,` + accessB + `]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.call(t, "GET", "/api/v1/me", tc.auth, "")
			if r.status != http.StatusOK || r.body != tc.me+"\n" {
				t.Fatalf("GET /api/v1/me: %d %s; want 200 %s", r.status, r.body, tc.me)
			}
			r = s.call(t, "POST", "/mcp", tc.auth, initBody)
			if r.status != http.StatusOK || r.header.Get("Mcp-Session-Id") == "" {
				t.Fatalf("POST /mcp initialize: %d %s", r.status, r.body)
			}
			// The instructions name every project of the caller, the first
			// one as the default.
			first := strings.Index(tc.me, `"project":"`) + len(`"project":"`)
			def := tc.me[first : first+strings.Index(tc.me[first:], `"`)]
			for _, p := range []string{"team/backend", "team/shared"} {
				if strings.Contains(tc.me, p) != strings.Contains(r.body, "- "+p+" (") {
					t.Errorf("initialize instructions and /me disagree about %s: %s", p, r.body)
				}
			}
			if !strings.Contains(r.body, def+" (") || !strings.Contains(r.body, "the default") {
				t.Errorf("initialize instructions do not name %s as the default: %s", def, r.body)
			}
		})
	}
	// Without a project, a write lands in the first key's project.
	r := s.call(t, "POST", "/api/v1/entries", bearer(a, b), `{"slug":"notes/x","content":"one"}`)
	if r.status != http.StatusCreated || !strings.HasPrefix(r.body, `{"project":"team/backend","slug":"notes/x","version":1,`) {
		t.Fatalf("remember with A,B: %d %s", r.status, r.body)
	}
	// The request log names the first key's agent and every project.
	if len(logLines(s.log.String(), "path=/api/v1/entries", "status=201", "agent=agent-a", "project=team/backend,team/shared")) != 1 {
		t.Errorf("the request log does not name the caller of A,B:\n%s", s.log.String())
	}
}

// TestKeyListRefused: one bad key in the list refuses the request with 401,
// WWW-Authenticate and a message naming its position, never a project —
// on /api/v1 and /mcp alike. Nothing is logged but that message: no key,
// not even part of one, and no project.
func TestKeyListRefused(t *testing.T) {
	s := newFullStack(t, Config{})
	s.serve(t)
	a, _ := s.env.Key(t, "team", "backend", "agent-a", memory.RoleWrite)
	b, _ := s.env.Key(t, "team", "shared", "agent-b", memory.RoleRead)
	revoked, rc := s.env.Key(t, "team", "secret", "agent-c", memory.RoleAdmin)
	if err := s.env.Svc.RevokeKey(t.Context(), rc.First().ID); err != nil {
		t.Fatal(err)
	}
	admin, _, err := s.env.Svc.CreateServerAdminKey(t.Context(), "root")
	if err != nil {
		t.Fatal(err)
	}
	unknown := "munin_" + strings.Repeat("q", len(a)-len("munin_"))
	var sixteen []string
	for i := range 15 {
		sixteen = append(sixteen, fmt.Sprintf("munin_%034d", i))
	}
	// A 10 KB header: a valid key followed by made-up ones.
	long := a
	for len(long) < 10<<10 {
		long += ",munin_" + strings.Repeat("z", 34)
	}
	for _, tc := range []struct{ name, auth, msg string }{
		{"an unknown key second of three", bearer(a, unknown, b), "key 2 of 3 is unknown or revoked"},
		{"an unknown key first", bearer(unknown, a), "key 1 of 2 is unknown or revoked"},
		{"a revoked key", bearer(a, revoked), "key 2 of 2 is unknown or revoked"},
		{"a revoked key alone", bearer(revoked), "unknown or revoked key"},
		{"a token without munin_", bearer(a, "abc", b), "key 2 of 3 is unknown or revoked"},
		{"a munin_ token of a key's length plus one", bearer(b, a+"x"), "key 2 of 2 is unknown or revoked"},
		{"an empty list", "Bearer ,", "key 1 of 2 is empty"},
		{"an empty list with spaces", "Bearer  , ", "key 1 of 2 is empty"},
		{"an empty place", bearer(a, "", b), "key 2 of 3 is empty"},
		{"a trailing comma", bearer(a, b) + ",", "key 3 of 3 is empty"},
		{"17 keys", bearer(append([]string{a, b}, sixteen...)...), "17 keys sent; at most 16 keys fit in one Authorization header"},
		{"a 10 KB header", "Bearer " + long, fmt.Sprintf("the key list is %d bytes; at most 16 keys of at most 256 bytes each fit", len(long))},
		{"a 10 KB token", "Bearer munin_" + strings.Repeat("z", 10<<10), fmt.Sprintf("the key list is %d bytes; at most 16 keys of at most 256 bytes each fit", 10<<10+len("munin_"))},
		{"a server-admin key with another", bearer(a, admin), "key 2 of 2 is a server-admin key, which is used alone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, rq := range [][2]string{{"GET", "/api/v1/me"}, {"POST", "/api/v1/entries"}, {"POST", "/mcp"}} {
				body := ""
				if rq[0] == "POST" {
					body = initBody
				}
				r := s.call(t, rq[0], rq[1], tc.auth, body)
				if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") != api.AuthChallenge ||
					r.body != errorBody("unauthorized", tc.msg) {
					t.Errorf("%s %s: %d, WWW-Authenticate %q, %s; want 401 %q", rq[0], rq[1], r.status, r.header.Get("WWW-Authenticate"), r.body, tc.msg)
				}
			}
		})
	}
	entries := s.call(t, "GET", "/api/v1/entries", bearer(a), "")
	if entries.status != http.StatusOK || entries.body != `{"entries":[],"next_cursor":""}`+"\n" {
		t.Fatalf("a refused request wrote something: %d %s", entries.status, entries.body)
	}

	logs := s.log.String()
	for _, tok := range []string{a, b, revoked, admin, unknown, sixteen[0]} {
		if secret := strings.TrimPrefix(tok, "munin_"); strings.Contains(logs, secret[:8]) {
			t.Fatalf("the log contains (part of) a key:\n%s", logs)
		}
	}
	if strings.Contains(logs, "zzzzzzzz") || strings.Contains(logs, "abc") {
		t.Fatalf("the log contains what was sent as a key:\n%s", logs)
	}
	refused := logLines(logs, "status=401")
	if len(refused) == 0 {
		t.Fatalf("no refusal in the log:\n%s", logs)
	}
	for _, line := range refused {
		for _, leak := range []string{"team", "backend", "shared", "secret", "agent-", "root"} {
			if strings.Contains(line, leak) {
				t.Errorf("a refusal's log line names %q: %s", leak, line)
			}
		}
	}
	// Each refusal is logged by its position, as the client was told.
	if n := len(logLines(logs, "status=401", `refused="key 2 of 3 is unknown or revoked"`)); n != 6 {
		t.Errorf("%d log lines of refusals of key 2 of 3, want 6 (two cases, three routes):\n%s", n, logs)
	}
}

// TestRevokingOneOfTwoKeys: once one key of a pair is revoked, the next
// request with the pair is refused, on both routes, while the other key
// alone still works.
func TestRevokingOneOfTwoKeys(t *testing.T) {
	s := newFullStack(t, Config{})
	s.serve(t)
	a, _ := s.env.Key(t, "team", "backend", "agent-a", memory.RoleWrite)
	b, cb := s.env.Key(t, "team", "shared", "agent-b", memory.RoleRead)
	for _, path := range []string{"/api/v1/me", "/api/v1/entries"} {
		if r := s.call(t, "GET", path, bearer(a, b), ""); r.status != http.StatusOK {
			t.Fatalf("GET %s with A,B before the revocation: %d %s", path, r.status, r.body)
		}
	}
	if err := s.env.Svc.RevokeKey(t.Context(), cb.First().ID); err != nil {
		t.Fatal(err)
	}
	for _, rq := range [][3]string{{"GET", "/api/v1/me", ""}, {"GET", "/api/v1/entries", ""}, {"POST", "/mcp", initBody}} {
		r := s.call(t, rq[0], rq[1], bearer(a, b), rq[2])
		if r.status != http.StatusUnauthorized || r.body != errorBody("unauthorized", "key 2 of 2 is unknown or revoked") {
			t.Errorf("%s %s with A,B after revoking B: %d %s", rq[0], rq[1], r.status, r.body)
		}
	}
	if r := s.call(t, "GET", "/api/v1/me", bearer(a), ""); r.status != http.StatusOK {
		t.Fatalf("A alone after revoking B: %d %s", r.status, r.body)
	}
}

// TestKeyLimitsChargeTheFirstKey: a request carrying A,B is one request of
// key A for the limits per key: A's rate applies to the pair (and to A
// alone), while B alone still has its own budget.
func TestKeyLimitsChargeTheFirstKey(t *testing.T) {
	// A burst of one and a refill in 1000 s: a second request in the test
	// is always over the rate.
	s := newFullStack(t, Config{RatePerKey: 0.001, MaxInFlightPerKey: -1, RefusalHold: -1})
	s.serve(t)
	a, ca := s.env.Key(t, "team", "backend", "agent-a", memory.RoleWrite)
	b, cb := s.env.Key(t, "team", "shared", "agent-b", memory.RoleRead)
	overRate := func(id int64, agent string) string {
		return fmt.Sprintf("key %d (%s) sends more than 0.001 requests per second", id, agent)
	}
	if r := s.call(t, "GET", "/api/v1/me", bearer(a, b), ""); r.status != http.StatusOK {
		t.Fatalf("A,B first: %d %s", r.status, r.body)
	}
	for _, auth := range []string{bearer(a, b), bearer(a)} {
		r := s.call(t, "GET", "/api/v1/me", auth, "")
		if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" || !strings.Contains(r.body, overRate(ca.First().ID, "agent-a")) {
			t.Fatalf("%d keys after A,B spent A's burst: %d %s; want 429 naming key A", strings.Count(auth, ",")+1, r.status, r.body)
		}
	}
	if r := s.call(t, "GET", "/api/v1/me", bearer(b), ""); r.status != http.StatusOK {
		t.Fatalf("B alone after A,B: %d %s (the pair was charged to B as well)", r.status, r.body)
	}
	// B,A is a request of key B, whose burst B alone has spent.
	r := s.call(t, "GET", "/api/v1/me", bearer(b, a), "")
	if r.status != http.StatusTooManyRequests || !strings.Contains(r.body, overRate(cb.First().ID, "agent-b")) {
		t.Fatalf("B,A after B spent its burst: %d %s; want 429 naming key B", r.status, r.body)
	}
}

// TestHeaderSizes: Authorization headers up to the server's MaxHeaderBytes
// (64 KiB) reach Munin and get its 401; beyond it Go's server answers 431
// itself, before any handler runs.
func TestHeaderSizes(t *testing.T) {
	s := newFullStack(t, Config{})
	s.serve(t)
	for _, n := range []int{10 << 10, 48 << 10} {
		r := s.call(t, "GET", "/api/v1/me", "Bearer munin_"+strings.Repeat("k", n), "")
		if r.status != http.StatusUnauthorized || !strings.Contains(r.body, "the key list is") {
			t.Errorf("a %d-byte key list: %d %s; want 401 naming its size", n, r.status, r.body)
		}
	}
	r := s.call(t, "GET", "/api/v1/me", "Bearer munin_"+strings.Repeat("k", maxHeaderBytes+8<<10), "")
	if r.status != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a header over MaxHeaderBytes: %d %s; want 431 from net/http", r.status, r.body)
	}
}

// TestTwoAuthorizationHeaders: keys sent in two Authorization headers are
// refused, saying how to send them, rather than the second silently ignored.
func TestTwoAuthorizationHeaders(t *testing.T) {
	s := newFullStack(t, Config{})
	s.serve(t)
	a, _ := s.env.Key(t, "team", "backend", "agent-a", memory.RoleWrite)
	b, _ := s.env.Key(t, "team", "shared", "agent-b", memory.RoleRead)
	for _, path := range []string{"/api/v1/me", "/mcp"} {
		req, _ := http.NewRequest("POST", s.base+path, strings.NewReader(initBody))
		if path == "/api/v1/me" {
			req.Method = "GET"
			req.Body = http.NoBody
		}
		req.Header.Add("Authorization", "Bearer "+a)
		req.Header.Add("Authorization", "Bearer "+b)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := errorBody("unauthorized", "2 Authorization headers sent; send one, with several keys comma-separated: Authorization: Bearer munin_…,munin_…")
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != api.AuthChallenge || string(body) != want {
			t.Errorf("%s with two Authorization headers: %d %s", path, resp.StatusCode, body)
		}
	}
	if logs := s.log.String(); strings.Contains(logs, strings.TrimPrefix(a, "munin_")[:8]) || strings.Contains(logs, strings.TrimPrefix(b, "munin_")[:8]) {
		t.Fatalf("the log contains a key:\n%s", logs)
	}
}
