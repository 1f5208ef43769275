package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// When stdin ends, mcp-go's stdio server cancels its context and closes its
// tool-call queue; a worker that sees the cancellation first returns and
// leaves queued calls unanswered (`printf … | munin stdio` lost calls now
// and then on a loaded machine). drainingStdio holds stdin's end back until
// every tool call read from it has been answered, so mcp-go shuts down only
// with an empty queue.

// drainWait bounds how long the end of stdin waits for outstanding answers.
const drainWait = time.Minute

type drainingStdio struct {
	ctx  context.Context
	in   *bufio.Reader
	line []byte // the rest of the line being handed to mcp-go

	mu      sync.Mutex
	pending map[string]int // ids of tool calls read and not yet answered (ids may repeat)
	changed chan struct{}  // closed and replaced whenever pending shrinks
}

func newDrainingStdio(ctx context.Context, in io.Reader) *drainingStdio {
	return &drainingStdio{ctx: ctx, in: bufio.NewReader(in), pending: map[string]int{}, changed: make(chan struct{})}
}

// message is what drainingStdio reads of each JSON-RPC line.
type message struct {
	ID     any    `json:"id"`
	Method string `json:"method"`
	// A line with a result or an error is a response to mcp-go, which it
	// never answers, whatever its method says.
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// isToolCall: a request mcp-go will answer with a tool result.
func (m message) isToolCall() bool {
	return m.Method == "tools/call" && m.ID != nil && m.Result == nil && m.Error == nil
}

// Read hands stdin to mcp-go line by line, noting the tool calls.
func (d *drainingStdio) Read(p []byte) (int, error) {
	if len(d.line) == 0 {
		line, err := d.in.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			if err == io.EOF {
				d.waitAnswered()
			}
			return 0, err
		}
		if line[len(line)-1] != '\n' {
			// mcp-go drops a last line that ends without a newline.
			line = append(line, '\n')
		}
		var m message
		if json.Unmarshal(line, &m) == nil && m.isToolCall() {
			d.mu.Lock()
			d.pending[fmt.Sprint(m.ID)]++
			d.mu.Unlock()
		}
		d.line = line
	}
	n := copy(p, d.line)
	d.line = d.line[n:]
	return n, nil
}

// answered is the writer side: mcp-go writes each message in one Write.
func (d *drainingStdio) answered(b []byte) {
	var m message
	if json.Unmarshal(b, &m) != nil || m.ID == nil || m.Method != "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if id := fmt.Sprint(m.ID); d.pending[id] > 0 {
		if d.pending[id]--; d.pending[id] == 0 {
			delete(d.pending, id)
		}
		close(d.changed)
		d.changed = make(chan struct{})
	}
}

// waitAnswered returns once no tool call is outstanding, ctx ends or
// drainWait has passed.
func (d *drainingStdio) waitAnswered() {
	timeout := time.NewTimer(drainWait)
	defer timeout.Stop()
	for {
		d.mu.Lock()
		left, changed := len(d.pending), d.changed
		d.mu.Unlock()
		if left == 0 {
			return
		}
		select {
		case <-changed:
		case <-d.ctx.Done():
			return
		case <-timeout.C:
			return
		}
	}
}

// answerWriter tells d about every message written to out.
type answerWriter struct {
	out io.Writer
	d   *drainingStdio
}

func (w answerWriter) Write(b []byte) (int, error) {
	n, err := w.out.Write(b)
	w.d.answered(b)
	return n, err
}
