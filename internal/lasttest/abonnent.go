//go:build last

// One subscriber of -last.abonnenten: an MCP client of the 2025-11-25 era
// spoken over plain HTTP — initialize, notifications/initialized, the
// session's GET stream, resources/subscribe of its project URI and of one
// contested entry URI — that notes when each notifications/resources/updated
// arrives. It is written by hand rather than with mcp-go's client because
// the test must know when the GET stream is open (mcp-go opens it in the
// background) and must timestamp each event as it is read, and because a
// thousand of them share the process with the server and the agents: a
// notification costs the client one line scan, no JSON decoding.

package lasttest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// resourceScheme is the scheme of Munin's MCP resources:
// munin://workspace/project and munin://workspace/project/slug.
const resourceScheme = "munin://"

// abonnent is one subscribed session.
type abonnent struct {
	id      int
	url     string
	token   string
	hc      *http.Client
	session string
	// project is "workspace/project", slug the subscribed contested entry.
	project, slug string
	cancel        context.CancelFunc
	done          chan struct{} // closed when the GET stream's reader ended
	nextID        int

	mu sync.Mutex
	// projectAt and entryAt are the arrival times (UnixNano) of the
	// updates for the project URI and for the entry URI, in order.
	projectAt, entryAt []int64
	// others counts updates for a URI this subscriber did not subscribe
	// to. (Munin's resync marker is an update of every subscribed URI of
	// the project: to the test it is one more update, and the hub's
	// WatchEvent.Resync is counted by the test's own watcher.)
	others int
	// streamErr is why the stream ended early (nil while it runs or after
	// close).
	streamErr error
}

func (s *abonnent) projectURI() string { return resourceScheme + s.project }
func (s *abonnent) entryURI() string   { return resourceScheme + s.project + "/" + s.slug }

// rpc posts one JSON-RPC message and returns the response body's JSON-RPC
// answer (nil for a notification). The answer may come as JSON or as an
// SSE stream; updates inside an SSE answer are noted like those on the GET
// stream.
func (s *abonnent) rpc(ctx context.Context, method string, params any, notification bool) (json.RawMessage, error) {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	if !notification {
		s.nextID++
		msg["id"] = s.nextID
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	s.headers(req)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" && s.session == "" {
		s.session = id
	}
	if notification {
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode/100 != 2 {
			return nil, fmt.Errorf("%s: HTTP %d", method, resp.StatusCode)
		}
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("%s: HTTP %d: %s", method, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	var answer []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// Notifications before the answer are noted; the answer ends it.
		s.readEvents(resp.Body, func(data []byte) bool {
			if bytes.Contains(data, []byte(`"id"`)) && !bytes.Contains(data, []byte(`"method"`)) {
				answer = bytes.Clone(data)
				return false
			}
			return true
		})
	} else if answer, err = io.ReadAll(resp.Body); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(answer, &r); err != nil {
		return nil, fmt.Errorf("%s: Antwort %q: %w", method, answer, err)
	}
	if r.Error != nil {
		return nil, fmt.Errorf("%s: Fehler %d: %s", method, r.Error.Code, r.Error.Message)
	}
	return r.Result, nil
}

func (s *abonnent) headers(req *http.Request) {
	req.Header.Set("Authorization", "Bearer "+s.token)
	if s.session != "" {
		req.Header.Set("Mcp-Session-Id", s.session)
		req.Header.Set("MCP-Protocol-Version", abonnentProtocol)
	}
}

// abonnentProtocol is the era the subscribers speak: sessions, a GET
// stream and resources/subscribe (2026-07-28 has none of them).
const abonnentProtocol = "2025-11-25"

// open runs the session's handshake and opens its GET stream, returning
// once the server answered 200 (the stream is counted and open) and a
// ping went over a second connection.
func (s *abonnent) open(ctx context.Context) error {
	_, err := s.rpc(ctx, "initialize", map[string]any{
		"protocolVersion": abonnentProtocol,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": fmt.Sprintf("abonnent-%04d", s.id), "version": "1"},
	}, false)
	if err != nil {
		return err
	}
	if s.session == "" {
		return fmt.Errorf("initialize: keine Mcp-Session-Id")
	}
	if _, err := s.rpc(ctx, "notifications/initialized", nil, true); err != nil {
		return err
	}
	streamCtx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(streamCtx, http.MethodGet, s.url, nil)
	if err != nil {
		cancel()
		return err
	}
	s.headers(req)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := s.hc.Do(req)
	if err != nil {
		cancel()
		return fmt.Errorf("GET-Strom: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		cancel()
		return fmt.Errorf("GET-Strom: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	s.cancel, s.done = cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		defer resp.Body.Close()
		err := s.readEvents(resp.Body, func([]byte) bool { return true })
		if streamCtx.Err() == nil {
			s.mu.Lock()
			s.streamErr = fmt.Errorf("GET-Strom endete: %v", err)
			s.mu.Unlock()
		}
	}()
	// A ping opens the connection the session's requests go over beside the
	// stream, as any client's next call would: the memory of the
	// subscriptions measured next is theirs alone, without a connection.
	if _, err := s.rpc(ctx, "ping", nil, false); err != nil {
		return err
	}
	return nil
}

// subscribe subscribes the open session to its project URI and its entry
// URI.
func (s *abonnent) subscribe(ctx context.Context) error {
	for _, uri := range []string{s.projectURI(), s.entryURI()} {
		if _, err := s.rpc(ctx, "resources/subscribe", map[string]any{"uri": uri}, false); err != nil {
			return err
		}
	}
	return nil
}

// readEvents reads SSE events from r, notes every resources/updated among
// them, and hands each event's data to more until more says stop. It
// returns the read error (nil at the end of the stream).
func (s *abonnent) readEvents(r io.Reader, more func(data []byte) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue // event:, id:, comments and the blank line between events
		}
		// Every message mcp-go writes is one data line.
		at := time.Now().UnixNano()
		s.note(data, at)
		if !more(data) {
			return nil
		}
	}
	return sc.Err()
}

var (
	updatedMethod = []byte(`"notifications/resources/updated"`)
	uriField      = []byte(`"uri":"`)
)

// note files one message arriving at at, if it is an update.
func (s *abonnent) note(data []byte, at int64) {
	if !bytes.Contains(data, updatedMethod) {
		return
	}
	_, rest, ok := bytes.Cut(data, uriField)
	if !ok {
		return
	}
	uri, _, _ := bytes.Cut(rest, []byte(`"`))
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case string(uri) == s.projectURI():
		s.projectAt = append(s.projectAt, at)
	case string(uri) == s.entryURI():
		s.entryAt = append(s.entryAt, at)
	default:
		s.others++
	}
}

// counts returns how many updates arrived so far for the project URI and
// the entry URI.
func (s *abonnent) counts() (project, entry int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.projectAt), len(s.entryAt)
}

// close ends the GET stream and the session (DELETE), and waits for the
// stream's reader.
func (s *abonnent) close() {
	if s.cancel != nil {
		s.cancel()
		<-s.done
		s.cancel = nil
	}
	if s.session == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.url, nil); err == nil {
		s.headers(req)
		if resp, err := s.hc.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	s.session = ""
}
