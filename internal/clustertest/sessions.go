//go:build cluster

// Lost sessions: an agent that held a session on a node when the node was
// killed keeps that session across the connection errors that follow, so
// the restarted node, which does not know it, must answer it with 404 (issue
// 12, point 3: the client gets the normal 404 and reconnects). killRound
// marks those agents; before the agents stop, every mark must have been
// answered by a 404.

package clustertest

import (
	"context"
	"fmt"
	"time"
)

// expectLostSession marks the agent if it holds a session (with the legacy
// protocol) and reports whether it does. Its node is about to be killed.
func (a *agent) expectLostSession() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.session == "" {
		return false
	}
	a.awaiting404 = true
	return true
}

// awaiting reports whether the agent still waits for the 404 of a session
// whose node was killed, and how many such 404s it saw.
func (a *agent) awaiting() (bool, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.awaiting404, a.lostSeen
}

// expectLostSessions marks the round's agents that hold a session on node
// (about to be killed) and returns how many do.
func (c *cluster) expectLostSessions(node int) int {
	c.mu.Lock()
	writers := c.writers
	c.mu.Unlock()
	n := 0
	for _, a := range writers {
		if a.node == node && a.expectLostSession() {
			n++
		}
	}
	return n
}

// awaitLostSessions waits, until ctx ends, for every marked agent's 404,
// polling; it returns the 404s seen on killed sessions and the agents still
// waiting.
func awaitLostSessions(ctx context.Context, agents []*agent) (seen int, waiting []string) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		seen, waiting = 0, nil
		for _, a := range agents {
			w, n := a.awaiting()
			seen += n
			if w {
				waiting = append(waiting, fmt.Sprintf("%s (n%d)", a.name, a.node))
			}
		}
		if len(waiting) == 0 {
			return seen, nil
		}
		select {
		case <-ctx.Done():
			return seen, waiting
		case <-tick.C:
		}
	}
}
