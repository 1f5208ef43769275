//go:build clients

// The MCP conformance suite's authorization-server scenarios against the
// issuer of an in-process server with OAuth on (clients_oauth_test.go),
// the test playing the person on the authorize page.
//
//	(cd .ci/clients && npm ci) && go test -tags clients -run TestClientsOAuthConformance -count=1 -v .
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"munin/internal/clientmeta"
)

// TestClientsOAuthConformance runs the conformance suite's authorization-
// server scenarios against the issuer. authorization-code-grant needs a
// client registered with the suite's loopback callback; it prints the
// authorize URL and waits on its own listener, so the test plays the person
// (the same form posts as oauth_flow.mjs) and sends the browser's last step,
// the GET of the redirect, to the suite.
func TestClientsOAuthConformance(t *testing.T) {
	node := findNode(t)
	s := startOAuthServer(t, clientmeta.Options{})

	t.Run("authorization-server-metadata-endpoint", func(t *testing.T) {
		checks := s.authConformance(t, node, []string{"--scenario", "authorization-server-metadata-endpoint"}, nil)
		judge(t, checks, "authorization-server-metadata", "authorization-server-metadata-cimd")
	})
	// The grant scenario reads the metadata scenario's result of the same
	// run: started alone (--scenario authorization-code-grant) it fails
	// with "Invalid authorization server metadata" (conformance
	// 0.2.0-alpha.12), so it runs as the whole authorization suite, both
	// scenarios in order.
	t.Run("authorization-code-grant", func(t *testing.T) {
		clientID := s.register(t, "munin-ci-conformance", "http://127.0.0.1/callback")
		key, _ := s.newKey(t, "app")
		checks := s.authConformance(t, node,
			[]string{"--client-id", clientID, "--resource", s.base + "/mcp", "-p", freePort(t)}, func(u string) error { return s.consent(u, key) })
		judge(t, checks, "authorization-server-metadata", "authorization-code-grant")
	})
}

// judge requires every check SUCCESS (WARNING and SKIPPED exit 0 too) and
// the checks named want among them.
func judge(t *testing.T, checks []check, want ...string) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range checks {
		seen[c.ID] = true
		if c.Status != "SUCCESS" {
			t.Errorf("check %s: %s, want SUCCESS: %s", c.ID, c.Status, c.ErrorMessage)
		}
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("no check %s among %d", w, len(checks))
		}
	}
}

// authConformance runs `conformance authorization` with args against the
// issuer and returns the checks of every scenario it ran. With person set,
// it is given the authorize URL the CLI prints and completes the sign-in
// while the CLI waits.
func (s *oauthServer) authConformance(t *testing.T, node nodeEnv, args []string, person func(string) error) []check {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), processWait)
	defer cancel()
	dir := t.TempDir()
	cmd := node.command(ctx, "conformance", append([]string{"authorization", "--url", s.base, "-o", dir}, args...)...)
	var out lockedBuffer
	cmd.Stderr = &out
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	personErr := make(chan error, 1)
	prefix := s.base + "/authorize?"
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		asked := false
		for sc.Scan() {
			line := sc.Text()
			out.Write([]byte(line + "\n"))
			if strings.HasPrefix(line, prefix) && person != nil && !asked {
				asked = true
				go func() {
					err := person(line)
					if err != nil {
						cancel() // the CLI would wait 5 minutes for the callback
					}
					personErr <- err
				}()
			}
		}
		if !asked {
			personErr <- nil
		}
	}()
	werr := cmd.Wait()
	if perr := <-personErr; perr != nil {
		t.Errorf("signing in on the authorize page: %s", redactTokens(perr.Error()))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "checks.json"))
	more, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
	files = append(files, more...)
	if len(files) == 0 {
		t.Fatalf("conformance authorization %v: no checks.json (exit %v)\n%s", args, werr, redactTokens(out.String()))
	}
	var all []check
	for _, f := range files {
		var checks []check
		if b, rerr := os.ReadFile(f); rerr != nil || json.Unmarshal(b, &checks) != nil {
			t.Fatalf("conformance: unreadable %s: %v\n%s", f, rerr, b)
		}
		all = append(all, checks...)
	}
	for _, c := range all {
		t.Logf("%s: %s %s", c.ID, c.Status, c.ErrorMessage)
	}
	if t.Failed() {
		t.Logf("conformance output:\n%s", redactTokens(out.String()))
	}
	return all
}

// register registers a public client by DCR (POST /register) and
// returns its id.
func (s *oauthServer) register(t *testing.T, name string, redirects ...string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"client_name": name, "redirect_uris": redirects, "grant_types": []string{"authorization_code"},
		"response_types": []string{"code"}, "token_endpoint_auth_method": "none"})
	res, err := http.Post(s.base+"/register", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var reg struct {
		ClientID string `json:"client_id"`
	}
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusCreated || json.Unmarshal(b, &reg) != nil || reg.ClientID == "" {
		t.Fatalf("register: %d %s", res.StatusCode, b)
	}
	return reg.ClientID
}

// hiddenRE matches the hidden fields of the authorize page's forms.
var hiddenRE = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)"`)

// formFields returns the hidden fields of the form with id in page.
func formFields(page, id string) (url.Values, error) {
	i := strings.Index(page, `id="`+id+`"`)
	if i < 0 {
		return nil, fmt.Errorf("the page has no form %s", id)
	}
	form := page[i:]
	if j := strings.Index(form, "</form>"); j >= 0 {
		form = form[:j]
	}
	v := url.Values{}
	for _, m := range hiddenRE.FindAllStringSubmatch(form, -1) {
		v.Set(m[1], html.UnescapeString(m[2]))
	}
	return v, nil
}

// consent plays the person on the authorize page at authorizeURL: paste the
// key, allow, and follow the redirect to the client's callback as a browser
// would (without Munin's cookie: the callback is another server).
func (s *oauthServer) consent(authorizeURL, key string) error {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: replyWait,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	page := func(res *http.Response, err error) (*http.Response, string, error) {
		if err != nil {
			return nil, "", err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return res, string(b), err
	}
	res, body, err := page(c.Get(authorizeURL))
	if err != nil || res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET the authorize page: %v %v", err, statusOf(res))
	}
	form, err := formFields(body, "oauth-signin-form")
	if err != nil {
		return err
	}
	form.Set("key", key)
	form.Set("step", "signin")
	res, body, err = page(c.PostForm(s.base+"/authorize", form))
	if err != nil || res.StatusCode != http.StatusOK {
		return fmt.Errorf("sign in: %v %v", err, statusOf(res))
	}
	if form, err = formFields(body, "oauth-decide-form"); err != nil {
		return err
	}
	form.Set("step", "allow")
	res, _, err = page(c.PostForm(s.base+"/authorize", form))
	if err != nil || res.StatusCode != http.StatusSeeOther {
		return fmt.Errorf("allow: %v %v, want 303", err, statusOf(res))
	}
	loc := res.Header.Get("Location")
	if !strings.HasPrefix(loc, "http://127.0.0.1:") {
		return errors.New("allow sent the browser elsewhere than the loopback callback")
	}
	// The suite prints the URL before its callback listener is up: a
	// refused connection is tried again, at most 50 times.
	for range 50 {
		res, _, err = page((&http.Client{Timeout: replyWait}).Get(loc))
		if !errors.Is(err, syscall.ECONNREFUSED) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || res.StatusCode != http.StatusOK {
		return fmt.Errorf("the suite's callback: %v %v", err, statusOf(res))
	}
	return nil
}

func statusOf(res *http.Response) string {
	if res == nil {
		return "no answer"
	}
	return res.Status
}

// freePort returns a loopback port free a moment ago, for the suite's
// callback listener (its CLI takes a port, not a listener).
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}
