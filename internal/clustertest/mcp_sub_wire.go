//go:build cluster

package clustertest

// The MCP subscriber's wire: its JSON-RPC calls, the answers and the
// session's GET stream, each notification stamped as it is read.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"munin/internal/changestream/ssetest"
)

// resourceURI is a project's resource URI.
func resourceURI(project string) string { return "munin://" + project }

// request is one JSON-RPC POST of conn (the session's id once it has one).
func (m *mcpSubscriber) request(ctx context.Context, conn *mcpConn, method string, params any, notification bool) (*http.Request, error) {
	out := struct {
		JSONRPC string `json:"jsonrpc"`
		ID      *int   `json:"id,omitempty"` // none: a notification
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}{JSONRPC: "2.0", Method: method, Params: params}
	if !notification {
		conn.next++
		id := conn.next
		out.ID = &id
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, conn.url, bytes.NewReader(b))
	if err == nil {
		m.headers(req, conn)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	return req, err
}

// headers sets the key and, within a session, its id and protocol version.
func (m *mcpSubscriber) headers(req *http.Request, conn *mcpConn) {
	req.Header.Set("Authorization", "Bearer "+m.token)
	if conn.id != "" {
		req.Header.Set("Mcp-Session-Id", conn.id)
		req.Header.Set("MCP-Protocol-Version", mcpProtocol)
	}
}

// call posts one message and returns the JSON-RPC result and the outcome.
// An answer that comes as an SSE stream may carry notifications first
// (mcp-go drains the session's channel onto an in-flight POST): they are
// noted like the GET stream's.
func (m *mcpSubscriber) call(ctx context.Context, conn *mcpConn, method string, params any, notification bool) (json.RawMessage, string) {
	req, err := m.request(ctx, conn, method, params, notification)
	if err != nil {
		m.count(outOther, err.Error())
		return nil, outOther
	}
	cctx, cancel := context.WithTimeout(ctx, feedTimeout)
	defer cancel()
	resp, err := m.hc.Do(req.WithContext(cctx))
	if err != nil {
		if ctx.Err() == nil {
			m.count(outConnection, "")
		}
		return nil, outConnection
	}
	defer resp.Body.Close()
	if conn.id == "" {
		conn.id = resp.Header.Get("Mcp-Session-Id")
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		m.count(outSession, "")
		return nil, outSession
	case resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusBadGateway:
		m.count(outUnavailable, "")
		return nil, outUnavailable
	case notification && resp.StatusCode == http.StatusAccepted:
		m.count(outOK, "")
		return nil, outOK
	case resp.StatusCode != http.StatusOK:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		m.count(outOther, fmt.Sprintf("%s: %s über %s: %d %s", m.name, method, conn.url, resp.StatusCode, strings.TrimSpace(string(b))))
		return nil, outOther
	}
	result, rpcErr, err := m.answer(resp, conn.window)
	switch {
	case err != nil && ctx.Err() == nil && cutOff(err):
		m.count(outConnection, "")
		return nil, outConnection
	case err != nil:
		m.count(outOther, fmt.Sprintf("%s: %s über %s: %v", m.name, method, conn.url, err))
		return nil, outOther
	case rpcErr != nil:
		m.count(outOther, fmt.Sprintf("%s: %s über %s: Fehler %s", m.name, method, conn.url, rpcErr))
		return nil, outOther
	}
	m.count(outOK, "")
	return result, outOK
}

// rpcMessage is any JSON-RPC message.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		URI string `json:"uri"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// answer reads a POST's answer, JSON or SSE, up to the response.
func (m *mcpSubscriber) answer(resp *http.Response, window int) (json.RawMessage, json.RawMessage, error) {
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var msg rpcMessage
		if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
			return nil, nil, err
		}
		return msg.Result, msg.Error, nil
	}
	r := ssetest.NewReader(resp.Body)
	for {
		e, err := r.Next()
		if err != nil {
			return nil, nil, err
		}
		if e.Data == "" {
			continue
		}
		var msg rpcMessage
		if err := json.Unmarshal([]byte(e.Data), &msg); err != nil {
			return nil, nil, err
		}
		if msg.Method == "" {
			return msg.Result, msg.Error, nil
		}
		m.received(msg, window, viaUnknown)
	}
}

// openStream opens the session's GET stream; the body is the stream.
func (m *mcpSubscriber) openStream(ctx context.Context, conn *mcpConn) (io.ReadCloser, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, conn.url, nil)
	if err != nil {
		m.count(outOther, err.Error())
		return nil, outOther
	}
	req.Header.Set("Accept", "text/event-stream")
	m.headers(req, conn)
	resp, err := m.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			m.count(outConnection, "")
		}
		return nil, outConnection
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusNotFound:
			m.count(outSession, "")
			return nil, outSession
		case http.StatusServiceUnavailable, http.StatusBadGateway:
			m.count(outUnavailable, "")
			return nil, outUnavailable
		}
		m.count(outOther, fmt.Sprintf("%s: GET /mcp über %s: %d %s", m.name, conn.url, resp.StatusCode, strings.TrimSpace(string(b))))
		return nil, outOther
	}
	m.count(outOK, "")
	return resp.Body, outOK
}

// readStream notes the stream's notifications until it ends and returns
// why it ended.
func (m *mcpSubscriber) readStream(ctx context.Context, body io.Reader, window, via int) string {
	r := ssetest.NewReader(body)
	base := m.c.nodes[via].advertise()
	owners, ownersAt := m.feed.ownersNow(ctx), time.Now()
	for {
		e, err := r.Next()
		if err != nil {
			if ctx.Err() == nil {
				m.count(outConnection, "")
			}
			return endStream
		}
		if e.Data == "" {
			continue
		}
		var msg rpcMessage
		if err := json.Unmarshal([]byte(e.Data), &msg); err != nil {
			m.count(outOther, fmt.Sprintf("%s: Nachricht über n%d nicht lesbar: %q (%v)", m.name, via, e.Data, err))
			continue
		}
		if time.Since(ownersAt) > time.Second {
			owners, ownersAt = m.feed.ownersNow(ctx), time.Now()
		}
		role := viaUnknown
		if o := owners[workspaceOf(strings.TrimPrefix(msg.Params.URI, "munin://"))]; o == base {
			role = viaOwner
		} else if o != "" {
			role = viaOther
		}
		m.received(msg, window, role)
	}
}

// received notes one notification that came through a node in role.
func (m *mcpSubscriber) received(msg rpcMessage, window int, role nodeRole) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	switch msg.Method {
	case methodListChanged:
		m.listChanged++
	case methodUpdated:
		project := ""
		for _, p := range m.projects {
			if msg.Params.URI == resourceURI(p) {
				project = p
			}
		}
		m.notes = append(m.notes, mcpNote{project: project, at: now, window: window, via: role})
	}
}

// closeSession ends a session that may still be live (best effort: its
// node may be gone).
func (m *mcpSubscriber) closeSession(conn *mcpConn) {
	if conn.id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, conn.url, nil)
	if err != nil {
		return
	}
	m.headers(req, conn)
	if resp, err := m.hc.Do(req); err == nil {
		resp.Body.Close()
	}
}
