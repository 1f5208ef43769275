// Package ssetest is what tests of server-sent event streams share: a
// client that opens a stream and reads its events, and a client that opens
// one and never reads (with a server whose sockets have small buffers, so
// that such a client blocks the server's writes soon).
package ssetest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Event is one server-sent event; a comment line (": ping") is an Event of
// its own with only Comment set, an id without data (a bare cursor) one
// with only ID.
type Event struct {
	ID, Type, Data, Comment string
	HasID                   bool
}

// Reader reads the events of a stream.
type Reader struct{ r *bufio.Reader }

// NewReader reads events from r.
func NewReader(r io.Reader) *Reader { return &Reader{r: bufio.NewReader(r)} }

// Next returns the next event or comment; io.EOF when the stream ended.
func (r *Reader) Next() (Event, error) {
	var e Event
	for {
		line, err := r.r.ReadString('\n')
		if err != nil {
			return e, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if e.HasID || e.Type != "" || e.Data != "" {
				return e, nil
			}
		case strings.HasPrefix(line, ":"):
			return Event{Comment: strings.TrimSpace(line[1:])}, nil
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				e.ID, e.HasID = value, true
			case "event":
				e.Type = value
			case "data":
				e.Data += value
			}
		}
	}
}

// NextOf returns the next event of type typ, passing over comments, bare
// ids and any other event that is not an "end" one (resync, failure): a
// test that waits for a change and gets the end of the stream fails.
func (r *Reader) NextOf(t testing.TB, typ string) Event {
	t.Helper()
	for {
		e, err := r.Next()
		if err != nil {
			t.Fatalf("waiting for event %q: %v", typ, err)
		}
		switch e.Type {
		case typ:
			return e
		case "resync", "failure":
			t.Fatalf("waiting for event %q: the stream ended with %s %s", typ, e.Type, e.Data)
		}
	}
}

// Get sends GET url with the headers given as name, value pairs and
// returns the answer, open; it is closed when the test ends. A deadline of
// a minute ends a test that waits for an event that never comes.
func Get(t testing.TB, client *http.Client, url string, hdr ...string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return resp
}

// smallBuffers gives every accepted connection a small send buffer.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// ServeSmall serves h until the test ends, on sockets with small send
// buffers.
func ServeSmall(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = smallBuffers{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// Stuck sends GET path to srv with the headers given as name, value pairs,
// from a socket with a small receive buffer, and never reads the answer
// (the test may, later). The connection is closed when the test ends.
func Stuck(t testing.TB, srv *httptest.Server, path string, hdr ...string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.(*net.TCPConn).SetReadBuffer(1024)
	req := "GET " + path + " HTTP/1.1\r\nHost: munin\r\n"
	for i := 0; i+1 < len(hdr); i += 2 {
		req += hdr[i] + ": " + hdr[i+1] + "\r\n"
	}
	if _, err := fmt.Fprint(conn, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	return conn
}
