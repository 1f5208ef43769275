package web

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// TestHeavyPagesOverTheLimit: while the key's place for heavy work is taken
// (one at a time here), an entry's render, a diff and a search answer 429
// with a Retry-After and say why; a cached render is still served; after
// the release the pages work.
func TestHeavyPagesOverTheLimit(t *testing.T) {
	u := newUIOn(t, servicetest.New(t, service.Options{RecallRate: -1, RecallConcurrency: 1}))
	u.remember(t, u.writerKey, "a", "first")
	u.remember(t, u.writerKey, "a", "second")
	b := u.signIn(t, u.reader)
	if code, _ := b.get(projPath + "/e/a?version=1"); code != http.StatusOK {
		t.Fatalf("warm the cache: %d", code)
	}
	release, err := u.env.Svc.HeavyWork(t.Context(), memory.NewCaller(u.readKey), ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{projPath + "/e/a", projPath + "/e/a?diff=1..2", projPath + "?q=first", "/search?q=first"} {
		resp, body := b.do("GET", path, nil)
		secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != http.StatusTooManyRequests || err != nil || secs < 1 || !strings.Contains(errorText(body), "at once") {
			t.Errorf("GET %s while busy: %d, Retry-After %q, %q; want 429 with Retry-After", path, resp.StatusCode, resp.Header.Get("Retry-After"), errorText(body))
		}
	}
	if code, _ := b.get(projPath + "/e/a?version=1"); code != http.StatusOK {
		t.Errorf("cached render while busy: %d, want 200", code)
	}
	release()
	for _, path := range []string{projPath + "/e/a", projPath + "/e/a?diff=1..2", projPath + "?q=first"} {
		if code, body := b.get(path); code != http.StatusOK {
			t.Errorf("GET %s after release: %d %s", path, code, errorText(body))
		}
	}
}

// TestLargeCachedRenderTakesHeavyPlace: showing a cached render of
// heavyShow bytes or more takes the key's place for heavy work (one at a
// time here) while the page is written: it is refused while the place is
// taken, a small cached render is not, and each page gives the place back
// when it is written, so the same page works again and again after the
// release.
func TestLargeCachedRenderTakesHeavyPlace(t *testing.T) {
	u := newUIOn(t, servicetest.New(t, service.Options{RecallRate: -1, RecallConcurrency: 1}))
	u.remember(t, u.writerKey, "big", strings.Repeat("many words in one long paragraph ", heavyShow/32+64))
	u.remember(t, u.writerKey, "small", "a few words")
	b := u.signIn(t, u.reader)
	for _, slug := range []string{"big", "small"} {
		if code, body := b.get(projPath + "/e/" + slug); code != http.StatusOK {
			t.Fatalf("warm the cache with %s: %d %s", slug, code, errorText(body))
		}
	}
	release, err := u.env.Svc.HeavyWork(t.Context(), memory.NewCaller(u.readKey), ref)
	if err != nil {
		t.Fatal(err)
	}
	resp, body := b.do("GET", projPath+"/e/big", nil)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(errorText(body), "at once") {
		t.Errorf("cached large render while busy: %d %q; want 429", resp.StatusCode, errorText(body))
	}
	if code, body := b.get(projPath + "/e/small"); code != http.StatusOK {
		t.Errorf("cached small render while busy: %d %s; want 200", code, errorText(body))
	}
	release()
	for i := range 3 {
		if code, body := b.get(projPath + "/e/big"); code != http.StatusOK {
			t.Fatalf("cached large render, page %d after the release: %d %s", i+1, code, errorText(body))
		}
	}
}
