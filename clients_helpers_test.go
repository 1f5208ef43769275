//go:build clients

// The machinery of clients_test.go: the in-process server with its keys and
// seed, the bearer-adding proxy for the conformance suite, and the Node
// processes (line protocol of .ci/clients/repl.mjs, the inspector's CLI,
// the conformance CLI), each with a timeout and stopped with its children.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"munin/internal/app"
	"munin/internal/memory"
	"munin/internal/service"
)

// Bounded waits: a reply or a notification that does not come within them
// fails the test with what was awaited. They bound a hang, they measure
// nothing.
const (
	replyWait   = 30 * time.Second
	eventWait   = 20 * time.Second
	processWait = 3 * time.Minute // the longest any Node process may live
)

// bulkEntries is dave's seed: more than one resources/list page (200).
const bulkEntries = 230

func bulkContent(i int) string { return fmt.Sprintf("Bulk entry number %03d.", i) }

// clientServer is the server under test and its keys.
type clientServer struct {
	base, mcpURL            string
	alice, bob, carol, dave string // keys: write in acme/app (two), acme/other, acme/bulk
	entryA, entryB          string // alice's entries notes/a and notes/b
	stop                    func() // shuts the server down (once; again at the test's end)
}

// startClientServer opens the app over a temp data directory, mints the
// keys, seeds, and serves on a loopback port until the test ends.
func startClientServer(t *testing.T) *clientServer {
	t.Helper()
	var cfg app.Config
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Storage.DataDir, cfg.Server.Addr = t.TempDir(), "127.0.0.1:0"
	a, err := app.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key := func(project, agent string) (string, memory.Caller) {
		ws, p, _ := strings.Cut(project, "/")
		tok, _, err := a.Svc.CreateKey(ctx, memory.ProjectRef{Workspace: ws, Project: p}, agent, memory.RoleWrite)
		if err != nil {
			t.Fatal(err)
		}
		c, err := a.Svc.Authenticate(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		return tok, c
	}
	remember := func(c memory.Caller, slug, content string) {
		if _, err := a.Svc.Remember(ctx, c, service.RememberRequest{Slug: slug, Content: content}); err != nil {
			t.Fatalf("seed %s: %v", slug, err)
		}
	}
	s := &clientServer{entryA: "munin://acme/app/notes/a", entryB: "munin://acme/app/notes/b"}
	var alice, carol, dave memory.Caller
	s.alice, alice = key("acme/app", "alice")
	s.bob, _ = key("acme/app", "bob")
	s.carol, carol = key("acme/other", "carol")
	s.dave, dave = key("acme/bulk", "dave")
	remember(alice, "notes/a", "Alice's first note.")
	remember(alice, "notes/b", "Alice's second note.")
	remember(carol, "seed", "Carol's project exists.")
	for i := range bulkEntries {
		remember(dave, fmt.Sprintf("bulk/%03d", i), bulkContent(i))
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Serve(sctx, ln) }()
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			cancel() // Serve drains and ends the open streams
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
			if err := a.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
	t.Cleanup(s.stop)
	s.base = "http://" + ln.Addr().String()
	s.mcpURL = s.base + "/mcp"
	return s
}

// write remembers content at slug with key over REST, as another agent
// would.
func (s *clientServer) write(t *testing.T, key, slug, content string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"slug": slug, "content": content})
	s.rest(t, key, http.MethodPost, "/api/v1/entries", bytes.NewReader(body), http.StatusCreated)
}

// forget forgets slug with key over REST.
func (s *clientServer) forget(t *testing.T, key, slug string) {
	t.Helper()
	s.rest(t, key, http.MethodDelete, "/api/v1/entries/"+slug, nil, http.StatusOK)
}

func (s *clientServer) rest(t *testing.T, key, method, path string, body io.Reader, want int) {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != want {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("%s %s: %d, want %d: %s", method, path, res.StatusCode, want, b)
	}
}

// bearerProxy serves the server's /mcp on another loopback port, adding
// key as bearer to every request: the conformance CLI cannot send headers.
// It flushes at once (FlushInterval -1), so SSE streams pass unbuffered.
func (s *clientServer) bearerProxy(t *testing.T, key string) string {
	t.Helper()
	target, err := url.Parse(s.base)
	if err != nil {
		t.Fatal(err)
	}
	p := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
			r.Out.Header.Set("Authorization", "Bearer "+key)
		},
		FlushInterval: -1,
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// command runs a Node program (a script or a bin of node_modules/.bin) in
// its own process group with a timeout; when ctx ends the whole group is
// killed, so no child of it stays behind.
func (e nodeEnv) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	if p, err := lookPath(name, e.path); err == nil {
		cmd.Path, cmd.Err = p, nil
	}
	cmd.Dir, cmd.Env = e.dir, e.environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// nodeClient is one client script speaking the line protocol of repl.mjs.
type nodeClient struct {
	name    string
	stdin   io.WriteCloser
	replies chan reply
	events  chan event
	fatal   chan string
	stderr  *lockedBuffer
	nextID  int
}

// reply answers one command: OK or Error.
type reply struct {
	ID    int             `json:"id,omitempty"`
	OK    json.RawMessage `json:"ok,omitempty"`
	Error *rpcError       `json:"error,omitempty"`
}

// withoutID is the reply as the server shaped it.
func (r reply) withoutID() reply { r.ID = 0; return r }

// rpcError is an error as the client reports it: Code is the JSON-RPC
// code, or the SDK's own string code for errors of the transport.
type rpcError struct {
	Code    any             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// event is a notification from the server, or the end of a 2026-07-28
// subscription (Closed, How).
type event struct {
	Notification string          `json:"notification,omitempty"`
	Params       json.RawMessage `json:"params,omitempty"`
	Closed       string          `json:"closed,omitempty"`
	How          string          `json:"how,omitempty"`
}

func (ev event) uri() string {
	var p struct{ URI string }
	_ = json.Unmarshal(ev.Params, &p)
	return p.URI
}

func (ev event) String() string { b, _ := json.Marshal(ev); return string(b) }

// start runs script (in .ci/clients) with args and waits until it has
// connected. It is stopped when the test ends.
func (e nodeEnv) start(t *testing.T, script string, args ...string) *nodeClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), processWait)
	cmd := e.command(ctx, "node", append([]string{script}, args...)...)
	c := &nodeClient{name: script, replies: make(chan reply, 16), events: make(chan event, 256), fatal: make(chan string, 1), stderr: &lockedBuffer{}}
	cmd.Stderr = c.stderr
	stdin, err1 := cmd.StdinPipe()
	stdout, err2 := cmd.StdoutPipe()
	if err1 != nil || err2 != nil {
		cancel()
		t.Fatal(err1, err2)
	}
	c.stdin = stdin
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", script, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	connected := make(chan struct{})
	go c.read(t, stdout, connected)
	t.Cleanup(func() {
		stdin.Close() // the script closes its client and exits
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s ended: %v\n%s", script, err, c.stderr)
			}
		case <-time.After(10 * time.Second):
			cancel()
			<-done
			t.Errorf("%s did not end within 10 s of its stdin closing; killed\n%s", script, c.stderr)
		}
		cancel()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", script, c.stderr)
		}
	})
	select {
	case <-connected:
	case msg := <-c.fatal:
		t.Fatalf("%s could not connect: %s", script, msg)
	case <-time.After(replyWait):
		t.Fatalf("%s did not connect within %s\n%s", script, replyWait, c.stderr)
	}
	return c
}

// read sorts the script's output lines into replies, events and fatal
// errors; other lines are logged.
func (c *nodeClient) read(t *testing.T, stdout io.Reader, connected chan struct{}) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var line struct {
			reply
			event
			Connected *string `json:"connected"`
			Fatal     string  `json:"fatal"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Logf("%s: %s", c.name, sc.Text())
			continue
		}
		switch {
		case line.Fatal != "":
			select {
			case c.fatal <- line.Fatal:
			default:
			}
		case line.Connected != nil:
			close(connected)
		case line.Notification != "" || line.Closed != "":
			c.events <- line.event
		default:
			c.replies <- line.reply
		}
	}
}

// call sends op with args and returns the reply.
func (c *nodeClient) call(t *testing.T, op string, args map[string]any) reply {
	t.Helper()
	c.nextID++
	msg := map[string]any{"id": c.nextID, "op": op}
	for k, v := range args {
		msg[k] = v
	}
	b, _ := json.Marshal(msg)
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		t.Fatalf("%s %s: %v\n%s", c.name, op, err, c.stderr)
	}
	select {
	case r := <-c.replies:
		if r.ID != c.nextID {
			t.Fatalf("%s %s: reply %d to command %d", c.name, op, r.ID, c.nextID)
		}
		return r
	case msg := <-c.fatal:
		t.Fatalf("%s %s: %s", c.name, op, msg)
	case <-time.After(replyWait):
		t.Fatalf("%s %s: no reply within %s\n%s", c.name, op, replyWait, c.stderr)
	}
	return reply{}
}

// ok calls op and fails unless it succeeded.
func (c *nodeClient) ok(t *testing.T, op string, args map[string]any) json.RawMessage {
	t.Helper()
	r := c.call(t, op, args)
	if r.Error != nil {
		t.Fatalf("%s %s %v: error %v %s", c.name, op, args, r.Error.Code, r.Error.Message)
	}
	return r.OK
}

// okInto calls op and decodes its result into v.
func (c *nodeClient) okInto(t *testing.T, op string, args map[string]any, v any) {
	t.Helper()
	if err := json.Unmarshal(c.ok(t, op, args), v); err != nil {
		t.Fatalf("%s %s: %v", c.name, op, err)
	}
}

// event returns the next notification, waiting for it at most eventWait.
func (c *nodeClient) event(t *testing.T, what string) event {
	t.Helper()
	select {
	case ev := <-c.events:
		return ev
	case msg := <-c.fatal:
		t.Fatalf("%s: %s", c.name, msg)
	case <-time.After(eventWait):
		t.Fatalf("%s: no notification within %s; awaited: %s", c.name, eventWait, what)
	}
	return event{}
}

// until returns the first notification match accepts, skipping others
// (at most 100).
func (c *nodeClient) until(t *testing.T, what string, match func(event) bool) event {
	t.Helper()
	for range 100 {
		if ev := c.event(t, what); match(ev) {
			return ev
		}
	}
	t.Fatalf("%s: 100 notifications without %s", c.name, what)
	return event{}
}

// inspectorOut is what the inspector's CLI printed: {"result":…} or
// {"error":…}.
type inspectorOut struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
	raw string
}

// inspector runs the inspector's CLI once; err is its exit status.
func (e nodeEnv) inspector(t *testing.T, args ...string) (inspectorOut, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), processWait)
	defer cancel()
	cmd := e.command(ctx, "mcp-inspector", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	// It prints a result on stdout, an error on stderr.
	if len(bytes.TrimSpace(stdout)) == 0 {
		stdout = stderr.Bytes()
	}
	out := inspectorOut{raw: strings.TrimSpace(string(stdout))}
	if jerr := json.Unmarshal(stdout, &out); jerr != nil {
		t.Fatalf("mcp-inspector %s: not JSON (%v, exit %v): %s\n%s", strings.Join(redact(args), " "), jerr, err, stdout, stderr.Bytes())
	}
	return out, err
}

// redact hides bearer keys in logged command lines.
func redact(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.HasPrefix(a, "Authorization:") {
			a = "Authorization: Bearer …"
		}
		out[i] = a
	}
	return out
}

// check is one entry of the conformance suite's checks.json.
type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// conformance runs one scenario of the conformance suite against url at
// spec and returns its checks. The CLI's exit status is not the verdict
// (WARNING and SKIPPED exit 0): the caller judges every check.
func (e nodeEnv) conformance(t *testing.T, url, spec, scenario string) []check {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), processWait)
	defer cancel()
	dir := t.TempDir()
	cmd := e.command(ctx, "conformance", "server", "--url", url, "--scenario", scenario, "--spec-version", spec, "-o", dir)
	out, err := cmd.CombinedOutput()
	files, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	if len(files) != 1 {
		t.Fatalf("conformance %s %s: %d checks.json files (exit %v)\n%s", spec, scenario, len(files), err, out)
	}
	var checks []check
	if b, rerr := os.ReadFile(files[0]); rerr != nil || json.Unmarshal(b, &checks) != nil {
		t.Fatalf("conformance %s %s: unreadable %s: %v\n%s", spec, scenario, files[0], rerr, b)
	}
	for _, c := range checks {
		t.Logf("%s %s: %s %s", spec, c.ID, c.Status, c.ErrorMessage)
	}
	return checks
}

// lockedBuffer collects a child's stderr while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
