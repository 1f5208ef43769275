//go:build hostile

// The victim project's other needs besides recall: its keyed requests are
// never refused while it stays under its own limits, and it can still open
// an MCP session (start an agent) whatever another project holds.

package hostile

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
)

// probeEvery is how often the session probe opens a session of the victim's
// project: a few a second, far under one key's limits.
const probeEvery = 250 * time.Millisecond

// startSessionProbe opens an MCP session of the victim's project with its
// own read key every probeEvery and closes it again (DELETE), until stop is
// closed; the answers land in the returned tally, whose done channel closes
// when the probe has ended. A server whose session table another project
// filled answers initialize 429 (issue 21, finding 2).
func startSessionProbe(e *env, stop <-chan struct{}) (*tally, <-chan struct{}) {
	tl := newTally("Opfer Sitzung (initialize, DELETE)")
	done := make(chan struct{})
	hc := clientFor(tl, 1, false) // no retry: a 429 is what the probe looks for
	go func() {
		defer close(done)
		defer hc.CloseIdleConnections()
		tick := time.NewTicker(probeEvery)
		defer tick.Stop()
		for n := 0; ; n++ {
			probeSession(e, hc, n)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return tl, done
}

// probeSession opens one session and, if it opened, ends it, so that the
// probe holds none.
func probeSession(e *env, hc *http.Client, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": e.atk.ProtoVers, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": fmt.Sprintf("opfer-probe-%d", n), "version": "1"},
	}}
	req := newReq(ctx, http.MethodPost, e.srv.base+"/mcp", e.probeKey, body)
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		return
	}
	del := newReq(ctx, http.MethodDelete, e.srv.base+"/mcp", e.probeKey, nil)
	del.Header.Set("Mcp-Session-Id", id)
	del.Header.Set("MCP-Protocol-Version", e.atk.ProtoVers)
	if resp, err := hc.Do(del); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
	}
}

// refused counts the answers in tl that are not 2xx, transport failures
// included, and names them ("3×429, 1 ohne Antwort").
func refused(tl *tally) (int, string) {
	codes, _, failed, first := tl.counts()
	n, names := failed, []string{}
	for c, k := range codes {
		if c < 200 || c >= 300 {
			n += k
			names = append(names, fmt.Sprintf("%d×%d", k, c))
		}
	}
	sort.Strings(names)
	if failed > 0 {
		names = append(names, fmt.Sprintf("%d ohne Antwort (%s)", failed, first))
	}
	return n, strings.Join(names, ", ")
}

// tooMany is how many 429s tl has counted so far.
func tooMany(tl *tally) int {
	codes, _, _, _ := tl.counts()
	return codes[http.StatusTooManyRequests]
}
