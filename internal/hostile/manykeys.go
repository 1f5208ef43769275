//go:build hostile

// Attacks 13 and 14 (issue 21, finding 2): one project's many keys. Every
// limit that is counted per key multiplies with the keys a project admin can
// mint; these attacks use all of the attacker project's read keys at once.

package hostile

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
)

// manyQueryWords is how many of the attacker's common words one recall of
// attack 14 asks for: each is in most of its entries, so every recall
// scores most of the project, yet the query is an ordinary one.
const manyQueryWords = 8

func times4(p int) int { return max(1, 4*p) }

// keyOf picks one of the attacker's read keys at random: every worker uses
// all of them, so no key comes near its own limits.
func (a *attacker) keyOf(rng *rand.Rand) string {
	if len(a.readKeys) == 0 {
		return a.readKey
	}
	return a.readKeys[rng.IntN(len(a.readKeys))]
}

// initSession sends one MCP initialize with key and drains the answer; the
// session it opens is never used or closed.
func initSession(ctx context.Context, a *attacker, hc *http.Client, key, client string) {
	body := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": a.protoVers, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": client, "version": "1"},
	}}
	req := newReq(ctx, http.MethodPost, a.base+"/mcp", key, body)
	req.Header.Set("Accept", "application/json, text/event-stream")
	send(hc, req)
}

// manySessions (issue 21, finding 2) opens MCP sessions with all of the
// attacker project's read keys, four workers per -feind.parallel (64), as
// fast as the server answers, and holds
// them: at 64 live sessions per key, -feind.schluessel keys (160) ask for
// more than the 10,000 the server holds in all. A server whose only
// bounds are per key and global then refuses every other project's
// initialize until the sessions expire.
func manySessions(ctx context.Context, a *attacker, hc *http.Client, worker int, rng *rand.Rand) {
	for n := 0; ctx.Err() == nil; n++ {
		// Each worker goes round all keys, so that every key reaches its 64
		// sessions with the fewest initializes.
		key := a.readKey
		if len(a.readKeys) > 0 {
			key = a.readKeys[(worker*17+n)%len(a.readKeys)]
		}
		initSession(ctx, a, hc, key, fmt.Sprintf("feind-viele-%d-%d", worker, n))
	}
}

// manyRecalls (issue 21, finding 2) recalls with all of the attacker
// project's read keys, four workers per -feind.parallel (64 by default, the
// server's admission slots): each key stays under its own recall rate and
// concurrency, together they ask for the whole server.
func manyRecalls(ctx context.Context, a *attacker, hc *http.Client, worker int, rng *rand.Rand) {
	words := make([]string, manyQueryWords)
	for ctx.Err() == nil {
		for i := range words {
			words[i] = a.common[rng.IntN(len(a.common))]
		}
		send(hc, newReq(ctx, http.MethodPost, a.base+"/api/v1/recall", a.keyOf(rng), map[string]any{"query": strings.Join(words, " ")}))
	}
}
