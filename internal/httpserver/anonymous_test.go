package httpserver

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"munin/internal/memory"
)

// signInForm stands in for the web UI's sign-in: it reads the posted form
// before any key is known, as the real one does. entered, when set, hears of
// each request that reached it.
func signInForm(entered chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if entered != nil {
			entered <- struct{}{}
		}
		if err := r.ParseForm(); err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, fmt.Sprintf("form over %d bytes", tooBig.Limit), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "form unreadable", http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, "signed in? "+fmt.Sprint(len(r.PostForm.Get("key"))))
	})
}

// slowBody opens a connection and starts a POST whose body never finishes:
// it declares 500 bytes and sends 10. It returns the connection and a
// channel that gets the first line of the answer (or the read error).
func slowBody(t *testing.T, base, path string, header string) (net.Conn, <-chan string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 500\r\n%s\r\nkey=munin_", path, strings.TrimPrefix(base, "http://"), header)
	answer := make(chan string, 1)
	go func() {
		buf := make([]byte, 64)
		n, err := c.Read(buf)
		if err != nil {
			answer <- "error: " + err.Error()
			return
		}
		answer <- strings.SplitN(string(buf[:n]), "\r\n", 2)[0]
	}()
	return c, answer
}

// TestSlowSignInBodiesHoldNoKeyedSlot: sign-in bodies trickled by clients
// without a key — twice as many as the server's requests in flight, with
// and without a forged credential header — make no keyed request wait or
// fail, and each is cut off by the anonymous read deadline.
func TestSlowSignInBodiesHoldNoKeyedSlot(t *testing.T) {
	const limit = 4
	entered := make(chan struct{}, 2*limit)
	s := newStack(t, Config{MaxInFlight: limit, Web: signInForm(entered)}, nil, nil)
	s.serve(t)
	var answers []<-chan string
	for i := range 2 * limit {
		header := ""
		if i%2 == 1 {
			header = "Authorization: Bearer forged\r\n" // spares it the anonymous slots, buys nothing else
		}
		_, a := slowBody(t, s.base, "/login", header)
		answers = append(answers, a)
	}
	// Wait until every slow body is being read — or, where the server
	// refused some (as it must not), until none came for a while: the
	// keyed requests below then show what the slow ones hold.
	for n := 0; n < 2*limit; n++ {
		select {
		case <-entered:
		case <-time.After(2 * time.Second):
			n = 2 * limit
		}
	}
	for i := range 3 * limit {
		if st := s.post(t, "/api/v1/entries", `{}`); st != http.StatusOK {
			t.Fatalf("keyed request %d while slow sign-in bodies are pending: %d, want 200", i+1, st)
		}
	}
	for i, a := range answers {
		select {
		case line := <-a:
			if strings.Contains(line, " 200 ") {
				t.Fatalf("slow body %d: %q, want it refused", i, line)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("slow body %d still held after 30 s (anonymous read deadline %s)", i, anonReadTimeout)
		}
	}
}

// TestAnonymousBodyIsCapped: before it shows a key, a request reads at most
// anonMaxBody bytes; a keyed request may send the server's whole cap.
func TestAnonymousBodyIsCapped(t *testing.T) {
	s := newStack(t, Config{Web: signInForm(nil)}, nil, nil)
	s.serve(t)
	form := "key=" + strings.Repeat("x", anonMaxBody)
	resp, err := client.Post(s.base+"/login", "application/x-www-form-urlencoded", strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), fmt.Sprint(anonMaxBody)) {
		t.Fatalf("sign-in form of %d bytes: %d %s, want 413 naming %d", len(form), resp.StatusCode, body, anonMaxBody)
	}
	big := `{"content":"` + strings.Repeat("x", 200<<10) + `"}`
	if st := s.post(t, "/api/v1/entries", big); st != http.StatusOK {
		t.Fatalf("keyed body of 200 KiB: %d, want 200", st)
	}
}

// TestAnonymousRequestsHaveTheirOwnBound: one address's requests without
// credentials beyond anonPerAddress at once are refused 429, while keyed
// requests from the same address go on.
func TestAnonymousRequestsHaveTheirOwnBound(t *testing.T) {
	s := newStack(t, Config{Web: signInForm(nil)}, nil, nil)
	s.serve(t)
	var answers []<-chan string
	for range anonPerAddress + 2 {
		_, a := slowBody(t, s.base, "/login", "")
		answers = append(answers, a)
	}
	// The server takes the connections in any order: whichever two come
	// last are refused at once, the others end at the read deadline.
	refused := 0
	for i, a := range answers {
		if i == 0 {
			// While the slots are full (no slow body has reached its
			// deadline yet), a keyed request from the same address goes on.
			if st := s.post(t, "/api/v1/entries", `{}`); st != http.StatusOK {
				t.Fatalf("keyed request while the address's anonymous slots are full: %d", st)
			}
		}
		select {
		case line := <-a:
			if strings.Contains(line, " 429 ") {
				refused++
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no answer to an anonymous request within 30 s")
		}
	}
	if refused != 2 {
		t.Fatalf("%d of %d anonymous requests refused, want the 2 over the bound of %d", refused, len(answers), anonPerAddress)
	}
}

// TestProjectShareOfTheServer: one project's keys together hold at most
// 1/ProjectShare of the server's requests in flight, however many keys it
// has; another project is served meanwhile.
func TestProjectShareOfTheServer(t *testing.T) {
	const limit = 8
	release := make(chan struct{})
	entered := make(chan struct{}, limit)
	blocking := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hold") != "" {
			entered <- struct{}{}
			<-release
		}
		_, _ = w.Write([]byte(`{}`))
	})
	s := newStack(t, Config{MaxInFlight: limit, RefusalHold: -1}, blocking, nil)
	var keys []string
	for i := range 6 {
		tok, _ := s.env.Key(t, "ws", "crowd", fmt.Sprintf("minted-%d", i), memory.RoleRead)
		keys = append(keys, tok)
	}
	other, _ := s.env.Key(t, "ws", "other", "bystander", memory.RoleRead)
	s.serve(t)
	send := func(token string, hold bool) (int, string) {
		req, _ := http.NewRequest("POST", s.base+"/mcp", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+token)
		if hold {
			req.Header.Set("X-Hold", "1")
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { close(release); wg.Wait() })
	share := limit / ProjectShare
	for i := range share {
		wg.Go(func() { send(keys[i], true) })
	}
	for range share {
		<-entered
	}
	for _, k := range keys[share:] {
		st, body := send(k, false)
		if st != http.StatusTooManyRequests || !strings.Contains(body, "project ws/crowd has 4 requests in flight") {
			t.Fatalf("a fresh key of a project at its share: %d %s, want 429 naming the project's share", st, body)
		}
	}
	if st, body := send(other, false); st != http.StatusOK {
		t.Fatalf("another project while the first holds its share: %d %s", st, body)
	}
}

// TestAnonymousRefusalIsHeld: a refusal of a request without a key is held
// back like a keyed one, so a client that reconnects at once is slowed to
// a request per connection and hold instead of costing a core in refusals.
func TestAnonymousRefusalIsHeld(t *testing.T) {
	entered := make(chan struct{}, anonPerAddress)
	cfg := Config{Web: signInForm(entered), RefusalHold: time.Hour}
	cfg.KeyLimits = NewKeyLimits(cfg)
	s := newStack(t, cfg, nil, nil)
	s.serve(t)
	for range anonPerAddress {
		slowBody(t, s.base, "/login", "")
	}
	for range anonPerAddress {
		select {
		case <-entered: // the address's anonymous slots fill up
		case <-time.After(30 * time.Second):
			t.Fatal("the slow sign-in bodies never reached the form")
		}
	}
	refused := make(chan int, 1)
	go func() {
		resp, err := client.Get(s.base + "/")
		if err != nil {
			refused <- 0
			return
		}
		resp.Body.Close()
		refused <- resp.StatusCode
	}()
	l := cfg.KeyLimits.l
	deadline := time.Now().Add(30 * time.Second)
	for l.heldAddr.Busy("127.0.0.1") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the refusal of a request without a key was never held")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case code := <-refused:
		t.Fatalf("the refusal went out during its hold: %d", code)
	default:
	}
	if st := s.post(t, "/api/v1/entries", `{}`); st != http.StatusOK {
		t.Fatalf("keyed request while an anonymous refusal is held: %d", st)
	}
}

// TestProjectRequestRate: all keys of a project together send at most
// ProjectRateFactor times one key's requests per second; the refusal names
// the project, and another project keeps its own rate.
func TestProjectRequestRate(t *testing.T) {
	cfg := Config{RatePerKey: 1, RefusalHold: -1} // per key 1/s, bursts of 2
	cfg.KeyLimits = NewKeyLimits(cfg)
	now := time.Now()
	cfg.KeyLimits.l.now = func() time.Time { return now }
	s := newStack(t, cfg, nil, nil)
	var keys []string
	for i := range 8 { // 8 keys × 2 = 16 > the project's burst of 10
		tok, _ := s.env.Key(t, "ws", "crowd", fmt.Sprintf("minted-%d", i), memory.RoleRead)
		keys = append(keys, tok)
	}
	other, _ := s.env.Key(t, "ws", "other", "bystander", memory.RoleRead)
	s.serve(t)
	admitted, lastBody := 0, ""
	for _, k := range keys {
		for range 2 {
			req, _ := http.NewRequest("POST", s.base+"/mcp", strings.NewReader(`{}`))
			req.Header.Set("Authorization", "Bearer "+k)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				admitted++
			} else {
				lastBody = string(body)
			}
		}
	}
	if want := 2 * ProjectRateFactor; admitted != want {
		t.Fatalf("the project's keys sent %d requests in one instant, want its burst of %d", admitted, want)
	}
	if !strings.Contains(lastBody, "project ws/crowd sends more than 5 requests per second") {
		t.Fatalf("refusal %s, want one naming the project's rate", lastBody)
	}
	if st := s.postAs(t, other, "/mcp", `{}`); st != http.StatusOK {
		t.Fatalf("another project: %d", st)
	}
}
