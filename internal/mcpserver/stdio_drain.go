package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"munin/internal/memory"
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

	outMu sync.Mutex // one message at a time on out: mcp-go's and refusals
	out   io.Writer

	mu      sync.Mutex
	pending map[string]int // ids of tool calls read and not yet answered (ids may repeat)
	changed chan struct{}  // closed and replaced whenever pending shrinks
}

func newDrainingStdio(ctx context.Context, in io.Reader, out io.Writer) *drainingStdio {
	return &drainingStdio{ctx: ctx, in: bufio.NewReader(in), out: out, pending: map[string]int{}, changed: make(chan struct{})}
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

// Read hands stdin to mcp-go line by line, noting the tool calls. A line
// that memory.CheckJSONText refuses (a duplicate member name, text Go's
// decoder would alter) never reaches mcp-go: it is answered here with a
// JSON-RPC error, as /mcp answers such a body.
func (d *drainingStdio) Read(p []byte) (int, error) {
	for len(d.line) == 0 {
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
		if err := memory.CheckJSONText(line); err != nil {
			d.outMu.Lock()
			_, werr := d.out.Write(append(RefusedMessage(line, err), '\n'))
			d.outMu.Unlock()
			if werr != nil {
				return 0, werr
			}
			continue
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

// answerWriter writes mcp-go's messages to d.out and tells d about each.
type answerWriter struct {
	d *drainingStdio
}

func (w answerWriter) Write(b []byte) (int, error) {
	w.d.outMu.Lock()
	n, err := w.d.out.Write(b)
	w.d.outMu.Unlock()
	w.d.answered(b)
	return n, err
}
