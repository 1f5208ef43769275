//go:build last

// The load test: go test -tags last -run TestLast -v . (see LASTTEST.md).
// The machinery lives in internal/lasttest; its -last.* flags are registered
// on the standard flag set when the package is imported here.
package main

import (
	"testing"

	"munin/internal/lasttest"
)

// TestLast runs the load test against an in-process server.
func TestLast(t *testing.T) { lasttest.Run(t) }
