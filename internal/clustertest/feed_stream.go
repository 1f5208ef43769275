//go:build cluster

// The live stream as a subscriber (issue 24, point 3): one reader of
// GET /api/v1/changes/stream (server-sent events) with admin keys for every
// project, through one node; when the stream ends — the node was killed,
// paused (no heartbeat), shut down (resync) or its feed failed — it
// reconnects with Last-Event-ID, the id of the last event it read, through
// the next node, as an EventSource does. Its changes are checked like a
// polling subscriber's (feed_check.go); it runs on past the writers until
// it received every acknowledged write or streamDrainLimit passed.

package clustertest

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"munin/internal/changestream/ssetest"
)

var clusterStrom = flag.Bool("cluster.strom", true, "ein Abonnent des Live-Stroms (GET /api/v1/changes/stream, Wiederaufnahme mit Last-Event-ID über den nächsten Knoten) neben den Feed-Abonnenten")

// streamIdle: a stream that sent nothing, not even its heartbeat (15 s),
// this long is taken for dead (a paused node) and opened anew elsewhere.
const streamIdle = 20 * time.Second

// streamSubscriber makes the stream's reader with admin keys of its own,
// starting on node 0.
func (c *cluster) streamSubscriber(t *testing.T) *subscriber {
	projects := c.projects[:min(len(c.projects), feedMaxKeys)]
	const name = "strom-0"
	tokens := c.keys(t, len(projects), "admin", func(j int) (string, string) { return projects[j], name })
	return newSubscriber(c, name, "admin", tokens, projects, 0, true)
}

// runStream reads the stream, reconnecting, until ctx ends.
func (s *subscriber) runStream(ctx context.Context) {
	defer s.hc.CloseIdleConnections()
	s.started()
	for ctx.Err() == nil {
		s.after(ctx, s.streamOnce(ctx))
	}
}

// streamOnce opens the stream from the cursor — the first time from the
// beginning (since=), after that with Last-Event-ID — and reads it until it
// ends; it returns how: outConnection (gone, idle, resync: go elsewhere),
// outUnavailable (refused or failed unavailable: try again), outOther.
func (s *subscriber) streamOnce(ctx context.Context) string {
	s.mu.Lock()
	via, cursor := s.node, s.cursor
	s.mu.Unlock()
	base := s.c.nodes[via].advertise()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	target := base + "/api/v1/changes/stream"
	if cursor == "" {
		target += "?since=" // empty: from the beginning
	}
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, target, nil)
	if err != nil {
		s.count(outOther, err.Error())
		return outOther
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	if cursor != "" {
		req.Header.Set("Last-Event-ID", cursor)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			s.count(outConnection, "")
		}
		return outConnection
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var body struct {
			Error struct{ Code, Message string }
		}
		json.NewDecoder(resp.Body).Decode(&body)
		return s.refused(via, resp.StatusCode, body.Error.Code, body.Error.Message)
	}
	s.count(outOK, "")
	s.mu.Lock()
	s.pages++ // connections
	s.mu.Unlock()
	idle := time.AfterFunc(streamIdle, cancel)
	defer idle.Stop()
	r := ssetest.NewReader(resp.Body)
	owners, ownersAt := s.ownersNow(ctx), time.Now()
	for {
		e, err := r.Next()
		if err != nil {
			if ctx.Err() == nil {
				s.count(outConnection, "")
			}
			return outConnection
		}
		idle.Reset(streamIdle)
		switch e.Type {
		case "change":
			var ch feedChange
			if err := json.Unmarshal([]byte(e.Data), &ch); err != nil || !e.HasID {
				s.count(outOther, fmt.Sprintf("%s: Ereignis über n%d nicht lesbar: %q (%v)", s.name, via, e.Data, err))
				return outOther
			}
			if time.Since(ownersAt) > time.Second {
				owners, ownersAt = s.ownersNow(ctx), time.Now()
			}
			s.mu.Lock()
			s.received(ch)
			s.cursor = e.ID
			if o := owners[workspaceOf(ch.Project)]; o != "" && o != base {
				s.nonOwner++
			}
			s.mu.Unlock()
		case "resync": // the node shuts down: on from that cursor elsewhere
			var d struct{ Cursor string }
			json.Unmarshal([]byte(e.Data), &d)
			s.mu.Lock()
			if d.Cursor != "" {
				s.cursor = d.Cursor
			}
			s.resyncs++
			s.mu.Unlock()
			return outConnection
		case "failure":
			var d struct{ Code, Message string }
			json.Unmarshal([]byte(e.Data), &d)
			s.mu.Lock()
			s.failures++
			s.mu.Unlock()
			if d.Code == "unavailable" { // an owner died: the feed answers again once the workspace has a new one
				s.count(outUnavailable, "")
				return outUnavailable
			}
			s.count(outOther, fmt.Sprintf("%s: Strom über n%d endete mit failure %s: %s", s.name, via, d.Code, d.Message))
			return outOther
		case "":
			if e.HasID { // the cursor the stream starts from
				s.mu.Lock()
				s.cursor = e.ID
				s.mu.Unlock()
			}
		}
	}
}

// refused sorts a stream refused before it started.
func (s *subscriber) refused(via, status int, code, msg string) string {
	switch {
	case status == http.StatusServiceUnavailable || status == http.StatusBadGateway:
		s.count(outUnavailable, "")
		return outUnavailable
	case status == http.StatusBadRequest && *clusterModus == "async" && strings.Contains(msg, "expired"):
		s.expired()
		return outUnavailable
	default:
		s.count(outOther, fmt.Sprintf("%s: GET /api/v1/changes/stream über n%d: %d %s: %s", s.name, via, status, code, msg))
		return outOther
	}
}

// awaitAll waits until the stream received every key of items, or ctx
// ends; it reports whether it did.
func (s *subscriber) awaitAll(ctx context.Context, items []feedItem) bool {
	for {
		s.mu.Lock()
		missing := 0
		for _, it := range items {
			if !s.seen[it.key] {
				missing++
			}
		}
		s.mu.Unlock()
		if missing == 0 {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		sleep(ctx, feedPauseMin)
	}
}
