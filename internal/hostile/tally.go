//go:build hostile

// Counting answers: every HTTP client of the test goes through a tally, so
// the table shows what the server answered each attack and the checks see
// every 5xx.

package hostile

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"munin/internal/httpretry"
)

// tally counts the answers one client got.
type tally struct {
	name     string
	mu       sync.Mutex
	codes    map[int]int
	cut      int // requests the test itself cancelled (a held stream)
	failed   int // transport errors: no answer at all
	firstErr string
}

func newTally(name string) *tally { return &tally{name: name, codes: map[int]int{}} }

func (t *tally) status(code int) {
	t.mu.Lock()
	t.codes[code]++
	t.mu.Unlock()
}

func (t *tally) err(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.cut++
		return
	}
	t.failed++
	if t.firstErr == "" {
		t.firstErr = err.Error()
	}
}

// counts returns a copy of the status counts.
func (t *tally) counts() (codes map[int]int, cut, failed int, firstErr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	codes = make(map[int]int, len(t.codes))
	for k, v := range t.codes {
		codes[k] = v
	}
	return codes, t.cut, t.failed, t.firstErr
}

// badServerErrors counts 5xx answers other than 503 and names them.
func (t *tally) badServerErrors() (int, string) {
	codes, _, _, _ := t.counts()
	n, names := 0, []string{}
	for c, k := range codes {
		if c >= 500 && c != http.StatusServiceUnavailable {
			n += k
			names = append(names, fmt.Sprintf("%d×%d", k, c))
		}
	}
	sort.Strings(names)
	return n, strings.Join(names, ", ")
}

// counting is a RoundTripper that records every answer in a tally.
type counting struct {
	next http.RoundTripper
	t    *tally
}

func (c counting) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		c.t.err(err)
		return nil, err
	}
	c.t.status(resp.StatusCode)
	return resp, nil
}

// clientFor is an HTTP client whose answers land in t; conns is how many
// idle connections it keeps, one per concurrent caller.
func clientFor(t *tally, conns int, retry bool) *http.Client {
	var rt http.RoundTripper = counting{&http.Transport{
		MaxIdleConnsPerHost: conns + 4,
		IdleConnTimeout:     90 * time.Second,
	}, t}
	if retry {
		// Waits out 429s as a well-behaved client does; the victim uses it,
		// so its latency includes the waits the server asked for.
		rt = httpretry.On429{Next: rt}
	}
	return &http.Client{Transport: rt}
}
