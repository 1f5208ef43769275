// Package logtest holds what tests need to read a server's log: a buffer
// that the server's goroutines write while the test reads it.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer collects log lines written from many goroutines; a test reads
// them with String at any time. The zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it is safe for concurrent use.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
