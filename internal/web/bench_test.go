package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"munin/internal/memory"
	"munin/internal/service"
	"munin/internal/servicetest"
)

// benchEntries is the size of the project the page benchmarks render.
const benchEntries = 10_000

// seed writes n entries straight through the store (group commit takes the
// parallel writers in batches), then builds the project's index by searching
// once, so the benchmarks measure rendering, not set-up.
func seed(b *testing.B, u *ui, n int) {
	b.Helper()
	ctx := context.Background()
	words := []string{"sqlite", "index", "budget", "agent", "search", "version", "backup", "latency", "schema", "deploy"}
	tags := []string{"db", "ops", "arch", "team", "search"}
	const workers = 16
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				content := fmt.Sprintf("# Note %d about %s\n\nThe %s of service %d depends on %s and %s. "+
					"We measured it on the build machine and wrote down what we found, so that the next agent "+
					"does not have to look again.\n", i, words[i%10], words[i%10], i, words[(i/10)%10], words[(i/100)%10])
				_, err := u.env.Store.Append(ctx, ref, memory.Write{
					Slug: fmt.Sprintf("notes/%s/%05d", words[i%10], i), Title: fmt.Sprintf("Note %d about %s", i, words[i%10]),
					Content: content, Tags: []string{tags[i%5], tags[(i/5)%5]}, Agent: "seed",
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	u.recall(b, u.readKey, "warm up")
}

// benchPages renders each path b.N times through the handler (server time:
// routing, session, queries, template) with a signed-in session.
func benchPages(b *testing.B, paths map[string]string) {
	// No recall rate: a search page counts like a recall of its key, and
	// b.N of them would be refused (429) past the default rate.
	u := newUIOn(b, servicetest.New(b, service.Options{RecallRate: -1}))
	seed(b, u, benchEntries)
	sess := u.h.sessions.create(memory.NewCaller(u.readKey))
	for name, path := range paths {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				serveBench(b, u, sess, path)
			}
		})
	}
}

// BenchmarkProjectPage10k renders the entry list of a 10,000-entry project:
// the first page newest first, a deep page by title, and a tag filter.
func BenchmarkProjectPage10k(b *testing.B) {
	benchPages(b, map[string]string{
		"updated":       projPath,
		"title-page100": projPath + "?sort=title&page=100",
		"tag":           projPath + "?tag=ops&sort=slug",
	})
}

// BenchmarkSearchPage10k renders recall results (50 hits with snippets) in
// a 10,000-entry project.
func BenchmarkSearchPage10k(b *testing.B) {
	benchPages(b, map[string]string{
		"one-word":  projPath + "?q=latency",
		"two-words": projPath + "?q=sqlite+backup",
	})
}

// BenchmarkSessionKeys renders a small project's page for a session of one
// key and one of memory.MaxCallerKeys keys: each request loads every key of
// its session by id, so this is what a full session costs per request.
func BenchmarkSessionKeys(b *testing.B) {
	u := newUI(b)
	u.remember(b, u.writerKey, "a", "one entry")
	keys := []memory.Key{u.readKey}
	for i := 1; i < memory.MaxCallerKeys; i++ {
		_, k := u.newKey(b, ws, fmt.Sprintf("p%d", i), "bot", memory.RoleRead)
		keys = append(keys, k)
	}
	for _, n := range []int{1, memory.MaxCallerKeys} {
		sess := u.h.sessions.create(memory.NewCaller(keys[:n]...))
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				serveBench(b, u, sess, projPath)
			}
		})
	}
}

// serveBench serves one GET of path for session sess through the handler
// and returns the page's size; anything but 200 ends the benchmark.
func serveBench(b *testing.B, u *ui, sess session, path string) int {
	req := httptest.NewRequest("GET", path, nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: sess.id})
	w := httptest.NewRecorder()
	u.h.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		b.Fatalf("GET %s: %d", path, w.Code)
	}
	return w.Body.Len()
}
