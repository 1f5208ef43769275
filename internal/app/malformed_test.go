package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
)

// expectation of one malformed request: an HTTP status, or a JSON-RPC error
// (any 2xx/4xx status with an "error" member), or a tool error with a code.
type expectation struct {
	status   int         // exact HTTP status, when set
	rpcError bool        // a JSON-RPC error object
	toolCode memory.Code // a tool result with isError and this code
}

type malformed struct {
	name    string
	method  string // default POST
	path    string // default /mcp
	body    string
	headers map[string]string // set; "" deletes
	want    expectation
}

func toolCall(tool, args string) string {
	return `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
}

// malformedCases are the kinds of broken requests a server on a network
// meets; each must get a 4xx or a JSON-RPC/tool error, never a 5xx.
func malformedCases(revoked string) []malformed {
	rpc := expectation{rpcError: true}
	invalid := expectation{toolCode: memory.CodeInvalid}
	long := strings.Repeat("x", 5000)
	return []malformed{
		// Broken JSON and JSON-RPC framing.
		{name: "broken JSON", body: `{"jsonrpc":"2.0",`, want: rpc},
		{name: "empty body", body: ``, want: rpc},
		{name: "JSON null", body: `null`, want: rpc},
		{name: "JSON string", body: `"tools/list"`, want: rpc},
		{name: "JSON number", body: `42`, want: rpc},
		{name: "batch of two", body: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, want: rpc},
		{name: "empty batch", body: `[]`, want: rpc},
		{name: "jsonrpc 1.0", body: `{"jsonrpc":"1.0","id":1,"method":"tools/list"}`, want: rpc},
		{name: "jsonrpc missing", body: `{"id":1,"method":"tools/list"}`, want: rpc},
		{name: "jsonrpc as number", body: `{"jsonrpc":2.0,"id":1,"method":"tools/list"}`, want: rpc},
		{name: "huge numeric id", body: `{"jsonrpc":"2.0","id":1e400,"method":"tools/list"}`, want: rpc},
		// mcp-go answers an object id (JSON-RPC allows only string, number
		// or null) by echoing it; harmless, so only "never a 5xx" applies.
		{name: "object id", body: `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`, want: expectation{status: 200}},
		// An id without a method is a JSON-RPC response (to a server request);
		// the server accepts and ignores it.
		{name: "method missing", body: `{"jsonrpc":"2.0","id":1}`, want: expectation{status: 202}},
		{name: "method as number", body: `{"jsonrpc":"2.0","id":1,"method":7}`, want: rpc},
		{name: "unknown method", body: `{"jsonrpc":"2.0","id":1,"method":"tools/destroy"}`, want: rpc},
		{name: "params as array", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1,2]}`, want: rpc},
		{name: "params null", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`, want: rpc},
		{name: "tool name missing", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`, want: rpc},
		{name: "tool name as number", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":3}}`, want: rpc},
		{name: "unknown tool", body: toolCall("wipe_all", `{}`), want: rpc},
		{name: "deeply nested JSON", body: toolCall("recall", strings.Repeat(`{"a":`, 20000)+`1`+strings.Repeat(`}`, 20000)), want: rpc},
		// Tool arguments of the wrong shape.
		{name: "arguments as string", body: toolCall("get", `"decisions/x"`), want: expectation{}},
		{name: "arguments as array", body: toolCall("get", `["decisions/x"]`), want: expectation{}},
		{name: "required slug missing", body: toolCall("remember", `{"content":"x"}`), want: invalid},
		{name: "slug as number", body: toolCall("remember", `{"slug":5,"content":"x"}`), want: invalid},
		{name: "content as object", body: toolCall("remember", `{"slug":"a","content":{"x":1}}`), want: invalid},
		{name: "tags as string", body: toolCall("remember", `{"slug":"a","content":"x","tags":"db"}`), want: invalid},
		{name: "tags with a number", body: toolCall("remember", `{"slug":"a","content":"x","tags":["db",7]}`), want: invalid},
		{name: "limit as string", body: toolCall("recall", `{"query":"x","limit":"10"}`), want: invalid},
		{name: "limit negative", body: toolCall("list", `{"limit":-5}`), want: invalid},
		{name: "limit huge", body: toolCall("list", `{"limit":1e20}`), want: invalid},
		{name: "version fractional", body: toolCall("get", `{"slug":"a","version":1.5}`), want: invalid},
		{name: "expected_version as string", body: toolCall("remember", `{"slug":"a","content":"x","expected_version":"0"}`), want: invalid},
		{name: "unknown argument", body: toolCall("remember", `{"slug":"a","content":"x","agent":"mallory"}`), want: invalid},
		// Names and slugs: traversal, NUL bytes, invalid UTF-8, length.
		{name: "slug traversal", body: toolCall("remember", `{"slug":"../../etc/passwd","content":"x"}`), want: invalid},
		{name: "slug inner dot-dot", body: toolCall("get", `{"slug":"a/../b"}`), want: invalid},
		{name: "slug absolute", body: toolCall("get", `{"slug":"/etc/passwd"}`), want: invalid},
		{name: "slug with NUL", body: toolCall("remember", `{"slug":"a\u0000b","content":"x"}`), want: invalid},
		{name: "slug with backslash", body: toolCall("get", `{"slug":"a\\b"}`), want: invalid},
		{name: "slug too long", body: toolCall("get", `{"slug":"`+strings.Repeat("a", 200)+`"}`), want: invalid},
		{name: "content with NUL", body: toolCall("remember", `{"slug":"a","content":"x\u0000y"}`), want: invalid},
		{name: "lone surrogate in content", body: toolCall("remember", `{"slug":"a","content":"\ud800"}`), want: expectation{status: 400}},
		{name: "invalid UTF-8 bytes", body: toolCall("remember", "{\"slug\":\"a\",\"content\":\"\xff\xfe\"}"), want: expectation{status: 400}},
		{name: "tag with NUL", body: toolCall("remember", `{"slug":"a","content":"x","tags":["a\u0000"]}`), want: invalid},
		{name: "very long query", body: toolCall("recall", `{"query":"`+long+`"}`), want: expectation{toolCode: memory.CodeTooLarge}},
		{name: "very long title", body: toolCall("remember", `{"slug":"a","content":"x","title":"`+long+`"}`), want: expectation{toolCode: memory.CodeTooLarge}},
		{name: "very long idempotency key", body: toolCall("remember", `{"slug":"a","content":"x","idempotency_key":"`+long+`"}`), want: expectation{toolCode: memory.CodeTooLarge}},
		{name: "content over 64 KiB", body: toolCall("remember", `{"slug":"a","content":"`+strings.Repeat("y", 70_000)+`"}`), want: expectation{toolCode: memory.CodeTooLarge}},
		// HTTP level.
		{name: "body over 1 MiB", body: toolCall("remember", `{"slug":"a","content":"`+strings.Repeat("z", 2<<20)+`"}`), want: expectation{status: 413}},
		{name: "content type text/plain", body: toolCall("get", `{"slug":"a"}`), headers: map[string]string{"Content-Type": "text/plain"}, want: expectation{status: 400}},
		{name: "unknown session id", body: toolCall("get", `{"slug":"a"}`), headers: map[string]string{"Mcp-Session-Id": "mcp-session-00000000-dead-beef"}, want: expectation{status: 404}},
		{name: "disallowed Origin", body: toolCall("get", `{"slug":"a"}`), headers: map[string]string{"Origin": "https://evil.example"}, want: expectation{status: 403}},
		{name: "foreign Host", body: toolCall("get", `{"slug":"a"}`), headers: map[string]string{"Host": "evil.example"}, want: expectation{status: 403}},
		{name: "missing key", body: toolCall("get", `{"slug":"a"}`), headers: map[string]string{"Authorization": ""}, want: expectation{status: 401}},
		{name: "unknown key", body: toolCall("get", `{"slug":"a"}`), headers: map[string]string{"Authorization": "Bearer munin_" + strings.Repeat("A", 43)}, want: expectation{status: 401}},
		{name: "revoked key", body: toolCall("get", `{"slug":"a"}`), headers: map[string]string{"Authorization": "Bearer " + revoked}, want: expectation{status: 401}},
		{name: "basic auth", body: toolCall("get", `{"slug":"a"}`), headers: map[string]string{"Authorization": "Basic YTpi"}, want: expectation{status: 401}},
		{name: "very long key", body: toolCall("get", `{"slug":"a"}`), headers: map[string]string{"Authorization": "Bearer munin_" + strings.Repeat("k", 10_000)}, want: expectation{status: 401}},
		{name: "wrong HTTP method", method: "PUT", body: `{}`, want: expectation{status: 405}},
		{name: "REST slug traversal", method: "GET", path: "/api/v1/entries/a/../../b", want: expectation{status: 400}},
		{name: "REST encoded NUL in slug", method: "GET", path: "/api/v1/entries/a%00b", want: expectation{status: 400}},
		{name: "REST unknown path", method: "GET", path: "/api/v1/secrets", want: expectation{status: 404}},
	}
}

// TestMalformedRequests sends every kind of malformed request to the real
// server: each gets the right 4xx or a JSON-RPC/tool error, never a 5xx, and
// nothing is written.
func TestMalformedRequests(t *testing.T) {
	a, base, token := startServer(t)
	ctx := context.Background()
	revoked, k, err := a.Svc.CreateKey(ctx, memory.ProjectRef{Workspace: "default", Project: "default"}, "gone", memory.RoleWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Svc.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	session := rawInitialize(t, base, token)
	cases := malformedCases(revoked)
	if len(cases) < 50 {
		t.Fatalf("only %d kinds of malformed requests", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := sendMalformed(t, base, token, session, tc)
			if status >= 500 {
				t.Fatalf("status %d: %s", status, body)
			}
			checkMalformed(t, tc.want, status, body)
		})
	}
	key := mustKey(t, a, token).First()
	if page, err := a.Svc.List(ctx, mustKey(t, a, token), service.ListRequest{}); err != nil || len(page.Entries) != 0 {
		t.Fatalf("malformed requests wrote entries: %+v, %v", page.Entries, err)
	}
	if n, err := a.Store.CountWritesSince(ctx, key.Project, key.CreatedAt.Add(-1)); err != nil || n != 0 {
		t.Fatalf("malformed requests left %d audit rows (%v)", n, err)
	}
}

func sendMalformed(t *testing.T, base, token, session string, tc malformed) (int, string) {
	t.Helper()
	method, path := tc.method, tc.path
	if method == "" {
		method = "POST"
	}
	if path == "" {
		path = "/mcp"
	}
	req, err := http.NewRequest(method, base+path, strings.NewReader(tc.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	for k, v := range tc.headers {
		switch {
		case k == "Host":
			req.Host = v
		case v == "":
			req.Header.Del(k)
		default:
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func checkMalformed(t *testing.T, want expectation, status int, body string) {
	t.Helper()
	if want.status != 0 {
		if status != want.status {
			t.Fatalf("status %d, want %d: %.300s", status, want.status, body)
		}
		return
	}
	if status >= 300 && status != 400 {
		t.Fatalf("status %d: %.300s", status, body)
	}
	var resp struct {
		Error  *json.RawMessage `json:"error"`
		Result *struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(sseData(body)), &resp); err != nil {
		t.Fatalf("answer is not JSON-RPC: %.300s", body)
	}
	switch {
	case want.rpcError:
		if resp.Error == nil {
			t.Fatalf("want a JSON-RPC error, got %.300s", body)
		}
	case want.toolCode != "":
		if resp.Result == nil || !resp.Result.IsError || len(resp.Result.Content) == 0 ||
			!strings.HasPrefix(resp.Result.Content[0].Text, string(want.toolCode)+": ") {
			t.Fatalf("want tool error %s, got %.300s", want.toolCode, body)
		}
	default: // either kind of error, as long as it is one
		if resp.Error == nil && (resp.Result == nil || !resp.Result.IsError) {
			t.Fatalf("want an error, got %.300s", body)
		}
	}
}

// sseData extracts the JSON of a text/event-stream answer; plain JSON passes through.
func sseData(body string) string {
	for _, line := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			return d
		}
	}
	return body
}
