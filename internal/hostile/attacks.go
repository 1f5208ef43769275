//go:build hostile

// The attacks: threats 1, 2, 4, 5, 6 of Stufe 5 in AUSBAUSTUFEN.md and,
// numbered on from 12, findings 1-3 of issue 21 (slowlogin.go, manykeys.go,
// webpages.go). Each is a loop that one worker runs until its context ends.
// All but attack 12 use the attacker's keys; only attack 2 needs the write
// key, and attacks 13 and 14 use all of its read keys.

package hostile

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// attacker is what every attack worker needs.
type attacker struct {
	base      string
	readKey   string
	writeKey  string
	readKeys  []string // all read keys of the attacker's project (attacks 13, 14)
	common    []string // the words of the attacker's entries (attacks 6, 14)
	protoVers string
	pages     []string    // the heavy pages' paths (attack 15)
	web       *webSession // attack 15's signed-in session
}

// attack is one numbered attack (its threat number in Stufe 5, or from 12
// on a finding of issue 21).
type attack struct {
	nr      int
	name    string
	workers func(parallel int) int
	run     func(ctx context.Context, a *attacker, hc *http.Client, worker int, rng *rand.Rand)
	// reached, if set, tells from the attack's answers whether it reached
	// what it attacks, and if not, why: an attack that a typo or an
	// unrelated check turns away would pass while proving nothing.
	reached func(codes map[int]int) string
}

// label names the attack in the tables and in the attacker's report.
func (a attack) label() string { return fmt.Sprintf("%d %s", a.nr, a.name) }

// noneOf is a reached check: none of the codes may have come back.
func noneOf(why string, bad ...int) func(map[int]int) string {
	return func(codes map[int]int) string {
		for _, c := range bad {
			if codes[c] > 0 {
				return fmt.Sprintf("%d× %d: %s", codes[c], c, why)
			}
		}
		return ""
	}
}

// someOK is a reached check: at least one answer was 2xx.
func someOK(codes map[int]int) string {
	for c, n := range codes {
		if c >= 200 && c < 300 && n > 0 {
			return ""
		}
	}
	return "keine Antwort 2xx: der Angriff kam nie durch (Schlüssel, Anmeldung, Seiten)"
}

// attacks are threats 1, 2, 4, 5 and 6 of Stufe 5 (AUSBAUSTUFEN.md),
// findings 1-3 of issue 21 as 12-15, and issue 25's OAuth endpoints as 16.
var attacks = []attack{
	{1, "GET /mcp mit erfundener Sitzung", same, ghostStream, nil},
	{2, "remember 64 KB Zufallswörter", quarter, bigRemember, nil},
	{4, "MCP-Sitzungen öffnen", same, openSession, nil},
	{5, "recall-Flut (Suchprotokoll)", same, recallFlood, nil},
	{6, "recall mit 256 häufigen Wörtern", same, wideRecall, nil},
	// Whether the sign-in gets to the form reader is checked before the
	// phases (checkSignInReached); its answers here cannot tell.
	{12, "langsame Anmeldung ohne Schlüssel", slowConns, slowLogin, nil},
	// A project at its share of sessions is refused them all (429), which
	// is what a fix does; a key the server does not know proves nothing.
	{13, "MCP-Sitzungen aller Schlüssel", times4, manySessions, noneOf("Schlüssel abgelehnt", 401, 403)},
	{14, "recall aller Schlüssel", times4, manyRecalls, someOK},
	{15, "schwere Webseiten", half, heavyPages, someOK},
	// Without a public URL the OAuth paths are 404: the flood would
	// prove nothing (the server starts with --public-url, startChild).
	{16, "OAuth ohne Schlüssel", same, oauthFlood, noneOf("OAuth aus", http.StatusNotFound)},
}

func same(p int) int    { return max(1, p) }
func quarter(p int) int { return max(1, p/4) }

// send runs one request and drains its answer (up to 1 MiB), so that the
// connection is reused; the tally of hc has counted the status.
func send(hc *http.Client, req *http.Request) {
	resp, err := hc.Do(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
}

func newReq(ctx context.Context, method, url, key string, body any) *http.Request {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(ctx, method, url, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// ghostStream (finding 1) opens a GET stream on /mcp with a session id
// nobody created, every fourth one 60 KB long. A server that keeps such ids
// answers 200 and holds the stream: the worker cancels it after 200 ms and
// goes on; a refusal is read and the connection reused.
func ghostStream(ctx context.Context, a *attacker, hc *http.Client, worker int, rng *rand.Rand) {
	for n := 0; ctx.Err() == nil; n++ {
		size := 16
		if n%4 == 0 {
			size = 30 << 10 // 60 KB of hex
		}
		raw := make([]byte, size)
		for i := 0; i < size; i += 8 {
			binary.LittleEndian.PutUint64(raw[i:], rng.Uint64())
		}
		rctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		req := newReq(rctx, http.MethodGet, a.base+"/mcp", a.readKey, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", hex.EncodeToString(raw))
		req.Header.Set("MCP-Protocol-Version", a.protoVers)
		resp, err := hc.Do(req)
		if err == nil {
			if resp.StatusCode != http.StatusOK {
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			}
			resp.Body.Close()
		}
		cancel()
	}
}

// bigRemember (finding 2) writes entries of 64 KB random words as fast as
// the budgets let it, and on: a refusal does not slow it down.
func bigRemember(ctx context.Context, a *attacker, hc *http.Client, worker int, rng *rand.Rand) {
	for n := 0; ctx.Err() == nil; n++ {
		body := map[string]any{
			"slug":    fmt.Sprintf("flut/w%02d-%06d-%d", worker, n, rng.Uint32()),
			"content": randomWords(rng, 65000),
		}
		send(hc, newReq(ctx, http.MethodPost, a.base+"/api/v1/entries", a.writeKey, body))
	}
}

// openSession (finding 4) opens MCP sessions and never uses or closes them.
func openSession(ctx context.Context, a *attacker, hc *http.Client, worker int, rng *rand.Rand) {
	for n := 0; ctx.Err() == nil; n++ {
		initSession(ctx, a, hc, a.readKey, fmt.Sprintf("feind-%d-%d", worker, n))
	}
}

// recallFlood (finding 5) sends recalls of about 1 KB that find nothing:
// four long random words, cheap to answer (four terms, none in the index),
// but each one is a search-log row of the full query.
func recallFlood(ctx context.Context, a *attacker, hc *http.Client, worker int, rng *rand.Rand) {
	for ctx.Err() == nil {
		words := make([]string, 4)
		for i := range words {
			words[i] = randomWord(rng, 250)
		}
		send(hc, newReq(ctx, http.MethodPost, a.base+"/api/v1/recall", a.readKey, map[string]any{"query": strings.Join(words, " ")}))
	}
}

// wideRecall (finding 6) sends 1 KB queries of the 256 words every entry of
// the attacker's project is made of: each term matches most documents.
func wideRecall(ctx context.Context, a *attacker, hc *http.Client, worker int, rng *rand.Rand) {
	words := append([]string(nil), a.common...)
	for ctx.Err() == nil {
		rng.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
		send(hc, newReq(ctx, http.MethodPost, a.base+"/api/v1/recall", a.readKey, map[string]any{"query": strings.Join(words, " ")}))
	}
}

// randomWord is n lowercase letters: a term no other text has.
func randomWord(rng *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return string(b)
}

// randomWords is about size bytes of random words of 3 to 10 letters.
func randomWords(rng *rand.Rand, size int) string {
	var sb strings.Builder
	sb.Grow(size)
	for sb.Len() < size-11 {
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(randomWord(rng, 3+rng.IntN(8)))
	}
	return sb.String()
}

// commonWords are 256 distinct three-letter words (consonant, vowel,
// consonant), none of them a stop word, so that 256 of them with spaces fit
// the 1,024 bytes a query may have.
func commonWords() []string {
	stop := map[string]bool{}
	for _, w := range strings.Fields("bin bis das dem den der des dir hat man mit nun nur sie uns von war was wem wen wer wir but can did for get got had has her him his its let may not nor our put say see set she the too was who yet van vor zum zur fur gut mal") {
		stop[w] = true
	}
	const cons, vows = "bdfgklmnprstz", "aeiou"
	var words []string
	for _, c1 := range cons {
		for _, v := range vows {
			for _, c2 := range cons {
				if w := string([]rune{c1, v, c2}); !stop[w] {
					words = append(words, w)
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(8, 8)) // the same 256 in every run
	rng.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
	return words[:256]
}
