//go:build hostile

// Attack 15 (issue 21, finding 3): the web UI's heaviest pages, loaded by
// one read key's signed-in session. The entries they show are written in
// the test's setup (seedHeavy).

package hostile

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"munin/internal/memory"
)

// The attacker's heavy entries.
const (
	heavyDiffSlug  = "schwer/vergleich" // two versions of 64 KiB, every other line changed
	heavyQuoteSlug = "schwer/zitat"     // ">" × 65,536: a blockquote nested 65,536 deep
)

func half(p int) int { return max(1, p/2) }

// diffVersions are two versions of memory.DefaultMaxContent bytes each:
// lines of three letters, all distinct, and in the second every other line
// another one. Half of all lines changed, none far from the next change, is
// the most a line diff has to compute and the most it shows.
func diffVersions() (string, string) {
	n := memory.DefaultMaxContent / 4 // "abc\n"
	var a, b strings.Builder
	for i := range n {
		w := []byte{byte('a' + i/676%26), byte('a' + i/26%26), byte('a' + i%26)}
		a.Write(w)
		a.WriteByte('\n')
		if i%2 == 0 {
			w[0] -= 'a' - 'A' // "Abc" is no line of the first version
		}
		b.Write(w)
		b.WriteByte('\n')
	}
	return a.String(), b.String()
}

// seedHeavy writes the entries attack 15 loads, with the attacker's write
// key (within its budget: three entries of 64 KiB).
func seedHeavy(t *testing.T, hc *http.Client, base, key string) {
	t.Helper()
	v1, v2 := diffVersions()
	for _, e := range []struct{ slug, content string }{
		{heavyDiffSlug, v1}, {heavyDiffSlug, v2}, {heavyQuoteSlug, strings.Repeat(">", memory.DefaultMaxContent)},
	} {
		if err := postEntry(hc, base, key, e.slug, e.content); err != nil {
			t.Fatal(err)
		}
	}
}

// heavyPaths are the pages attack 15 loads, in the attacker's project.
func heavyPaths(workspace, project string) []string {
	p := "/w/" + workspace + "/p/" + project + "/e/"
	return []string{p + heavyDiffSlug + "?diff=1..2", p + heavyQuoteSlug}
}

// webSession is the attacker's one signed-in web session: its cookie is in
// the attack client's jar, shared by all workers of attack 15.
type webSession struct {
	mu sync.Mutex
	ok bool
}

// signIn signs the read key in through the sign-in form unless a session is
// live; it reports whether one is. Workers wait for each other here, so the
// key signs in once, as a person in a browser does.
func (s *webSession) signIn(ctx context.Context, a *attacker, hc *http.Client) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ok {
		return true
	}
	form := url.Values{"key": {a.readKey}}.Encode()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/login", strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", a.base) // the form is posted from the server's own page
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	// Success is a redirect to the overview with the cookie set.
	s.ok = resp.StatusCode == http.StatusSeeOther
	return s.ok
}

// signedOut forgets the session: the server sent a page request to the
// sign-in page.
func (s *webSession) signedOut() {
	s.mu.Lock()
	s.ok = false
	s.mu.Unlock()
}

// heavyPages (issue 21, finding 3) loads the diff of two 64 KiB versions
// and the entry of 65,536 ">" in turn, half of -feind.parallel workers (8)
// at once from one signed-in session, and reads each page to its end (up to
// 64 MiB), as a browser does.
func heavyPages(ctx context.Context, a *attacker, hc *http.Client, worker int, rng *rand.Rand) {
	if len(a.pages) == 0 {
		return
	}
	for n := 0; ctx.Err() == nil; n++ {
		if !a.web.signIn(ctx, a, hc) {
			continue
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.base+a.pages[(worker+n)%len(a.pages)], nil)
		resp, err := hc.Do(req)
		if err != nil {
			continue
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		if resp.StatusCode == http.StatusSeeOther {
			a.web.signedOut()
		}
	}
}
