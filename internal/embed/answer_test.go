package embed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"munin/internal/embed/embedtest"
	"munin/internal/memory"
)

// secretText stands for memory content: an endpoint that quotes its input
// in an answer must not carry it into an error, and so into the log.
const secretText = "the launch code is 0000 and the vault is behind the painting"

// No answer of the endpoint — an error status of any kind, a page that is
// not JSON, JSON that is no vector — puts any of its body into the error:
// an endpoint that quotes its input would carry memory content into the
// log. The error names the status and a fixed reason instead.
func TestClientErrorsQuoteNothingOfTheAnswer(t *testing.T) {
	for _, c := range []struct {
		name, contentType string
		status            int
		body              string // %s: the quoted input
		want              string
	}{
		{"400", "application/json", 400, `{"error":"input too long: %s"}`, "answered 400"},
		{"401", "application/json", 401, `{"error":"bad token for %s"}`, "answered 401"},
		{"404", "text/plain", 404, `no model for %s`, "answered 404"},
		{"500", "application/json", 500, `{"error":"model crashed on %s"}`, "answered 500"},
		{"html", "text/html", 200, `<p>cannot embed %s</p>`, "not application/json"},
		{"content type", "text/" + strings.ReplaceAll(secretText, " ", "-"), 200, `%s`, "not application/json"},
		{"string vector", "application/json", 200, `{"data":[{"index":0,"embedding":["%s"]}]}`, "not a number"},
		{"object", "application/json", 200, `{"data":"%s"}`, "not the expected JSON"},
		{"syntax", "application/json", 200, `{"data":[%s]}`, "not the expected JSON"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req request
				_ = json.NewDecoder(r.Body).Decode(&req)
				w.Header().Set("Content-Type", c.contentType)
				w.WriteHeader(c.status)
				fmt.Fprintf(w, c.body, req.Input[0])
			}))
			t.Cleanup(srv.Close)
			_, err := newClient(t, srv.URL, ClientOptions{}).Embed(context.Background(), []string{secretText})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one with %q", err, c.want)
			}
			if strings.Contains(err.Error(), "launch code") || strings.Contains(err.Error(), "painting") {
				t.Fatalf("error quotes the input: %v", err)
			}
		})
	}
}

// The worker logs every failure; with an endpoint that quotes its input in
// every error, no entry text reaches the log.
func TestWorkerLogsNoEntryText(t *testing.T) {
	for _, status := range []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusInternalServerError} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			f := newFixture(t)
			ref := memory.ProjectRef{Workspace: "w", Project: "p"}
			if _, err := f.st.EnsureProject(context.Background(), ref); err != nil {
				t.Fatal(err)
			}
			if _, err := f.st.Append(context.Background(), ref, memory.Write{Slug: "s", Title: "t", Content: secretText, Agent: "a"}); err != nil {
				t.Fatal(err)
			}
			f.ep.Fail(status)
			fc := newFailedCalls()
			w := f.worker(t, "m", Options{OnCall: fc.onCall})
			w.Notify("w")
			fc.wait(t, 2)
			w.Close() // the log is complete
			log := f.log.String()
			if !strings.Contains(log, "answered "+strconv.Itoa(status)) {
				t.Fatalf("the failure is not logged with its status:\n%s", log)
			}
			if strings.Contains(log, "launch code") {
				t.Fatalf("the log holds the entry's text:\n%s", log)
			}
		})
	}
}

// countingTransport counts the answer bytes the client read and the most
// answer bodies being read at once.
type countingTransport struct {
	read          atomic.Int64
	mu            sync.Mutex
	reading, most int
}

type countingBody struct {
	io.ReadCloser
	t       *countingTransport
	started bool
	closed  bool
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, t: t}
	}
	return resp, err
}

func (b *countingBody) Read(p []byte) (int, error) {
	b.t.mu.Lock()
	if !b.started && !b.closed {
		b.started = true
		b.t.reading++
		b.t.most = max(b.t.most, b.t.reading)
	}
	b.t.mu.Unlock()
	n, err := b.ReadCloser.Read(p)
	b.t.read.Add(int64(n))
	return n, err
}

func (b *countingBody) Close() error {
	b.t.mu.Lock()
	if b.started && !b.closed {
		b.t.reading--
	}
	b.closed = true
	b.t.mu.Unlock()
	return b.ReadCloser.Close()
}

func (t *countingTransport) mostReading() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.most
}

// A 10 MiB answer to one text fails with an error naming the limit, after
// reading no more than the limit — whether the endpoint announces its size
// (Content-Length) or streams it.
func TestClientCapsTheAnswer(t *testing.T) {
	for _, announce := range []bool{true, false} {
		t.Run(fmt.Sprint("content-length ", announce), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body := `{"data":[{"index":0,"embedding":[1]}]` + strings.Repeat(" ", embedtest.BloatedSize) + `}`
				w.Header().Set("Content-Type", "application/json")
				if announce {
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				}
				_, _ = io.WriteString(w, body)
			}))
			t.Cleanup(srv.Close)
			tr := &countingTransport{}
			c := newClient(t, srv.URL, ClientOptions{HTTP: &http.Client{Transport: tr}})
			_, err := c.Embed(context.Background(), []string{"a"})
			if err == nil || !strings.Contains(err.Error(), "larger than") {
				t.Fatalf("10 MiB answer: %v, want an error saying it is larger than the limit", err)
			}
			if n := tr.read.Load(); n > answerCap(1)+64<<10 {
				t.Fatalf("read %d bytes of the answer, the limit for one text is %d", n, answerCap(1))
			}
		})
	}
	// The same through the test endpoint, for a whole batch.
	ep := newEndpoint(t, 8)
	ep.SetMode(embedtest.Bloated)
	tr := &countingTransport{}
	c := newClient(t, ep.URL, ClientOptions{HTTP: &http.Client{Transport: tr}})
	if _, err := c.Embed(context.Background(), []string{"a", "b"}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("bloated answer: %v", err)
	}
	if n := tr.read.Load(); n > answerCap(2)+64<<10 {
		t.Fatalf("read %d bytes of a bloated answer, the limit for two texts is %d", n, answerCap(2))
	}
	// A batch may answer more than one text, in proportion.
	if answerCap(memory.MaxEmbedBatch) < memory.MaxEmbedBatch*answerCap(1)/2 || answerCap(1) > 512<<10 {
		t.Fatalf("caps: one text %d, a batch %d", answerCap(1), answerCap(memory.MaxEmbedBatch))
	}
}

// A vector of more than MaxDimension dimensions is refused with an error
// saying so; MaxDimension itself (as JSON of realistic numbers) fits the
// cap of one text.
func TestClientRefusesWideVectors(t *testing.T) {
	wide := newEndpoint(t, MaxDimension+1)
	_, err := newClient(t, wide.URL, ClientOptions{}).Embed(context.Background(), []string{"a"})
	if err == nil || !strings.Contains(err.Error(), strconv.Itoa(MaxDimension)) || !strings.Contains(err.Error(), "dimensions") {
		t.Fatalf("%d dimensions: %v, want an error naming the most, %d", MaxDimension+1, err, MaxDimension)
	}
	widest := newEndpoint(t, MaxDimension)
	vs, err := newClient(t, widest.URL, ClientOptions{}).Embed(context.Background(), []string{"a b c d e f g h"})
	if err != nil || len(vs[0]) != MaxDimension {
		t.Fatalf("%d dimensions: %v", MaxDimension, err)
	}
}

// trickle answers headers and the start of a body, then nothing until the
// client goes away or release closes.
func trickle(t *testing.T, release chan struct{}) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"data":[`)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Reading an answer is bounded by the call's deadline: a body trickled
// forever ends the call when its context does.
func TestClientReadEndsAtDeadline(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := trickle(t, release)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := newClient(t, srv.URL, ClientOptions{}).Embed(ctx, []string{"a"})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("trickled answer: %v, want deadline exceeded", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call outlived its deadline by far")
	}
}

// However many calls run at once, no more than maxQueryReads answers of
// one text (and maxBatchReads of more) are read at the same time: the
// bytes in flight are bounded across requests, not only per answer. The
// others wait for a turn, within their deadline.
func TestClientBoundsConcurrentReads(t *testing.T) {
	release := make(chan struct{})
	srv := trickle(t, release)
	tr := &countingTransport{}
	c := newClient(t, srv.URL, ClientOptions{HTTP: &http.Client{Transport: tr}})
	const calls = 3 * maxQueryReads
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			texts := []string{"a"}
			if i%3 == 0 {
				texts = append(texts, "b")
			}
			_, _ = c.Embed(ctx, texts)
		}()
	}
	// Bounded wait until the calls that may read are reading.
	for i := 0; tr.mostReading() < maxQueryReads+maxBatchReads && i < 400; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // let any call beyond the bound show up
	most := tr.mostReading()
	cancel()
	close(release)
	wg.Wait()
	if most > maxQueryReads+maxBatchReads || most == 0 {
		t.Fatalf("%d answers read at once, want at most %d+%d", most, maxQueryReads, maxBatchReads)
	}
}
