package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"munin/internal/config"
	"munin/internal/reqlog/logtest"
)

// caddyfileOf is the Caddyfile docs/oauth.md shows between its
// <!-- caddyfile --> markers, so that the documented example is the one
// tested.
func caddyfileOf(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/oauth.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok1 := strings.Cut(string(doc), "<!-- caddyfile -->")
	block, _, ok2 := strings.Cut(rest, "<!-- /caddyfile -->")
	_, block, ok3 := strings.Cut(block, "```caddyfile\n")
	block, _, ok4 := strings.Cut(block, "```")
	if !ok1 || !ok2 || !ok3 || !ok4 {
		t.Fatal("docs/oauth.md has no Caddyfile between <!-- caddyfile --> markers")
	}
	return block
}

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln := listen(t)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	return port
}

// TestCaddyReverseProxy runs Munin behind Caddy with the site block of
// docs/oauth.md (a local certificate authority instead of ACME, loopback
// only): discovery names the public URL, a 401 names the resource
// metadata, a key works through the proxy, and with --trusted-proxies the
// request log names the client Caddy reported, not Caddy, and never what
// the client wrote into X-Forwarded-For itself.
func TestCaddyReverseProxy(t *testing.T) {
	caddy, err := exec.LookPath("caddy")
	if err != nil {
		if os.Getenv("MUNIN_REQUIRE_CADDY") == "1" {
			t.Fatal("caddy not found and MUNIN_REQUIRE_CADDY=1")
		}
		t.Skip("caddy not installed (apt-get install caddy)")
	}
	ln := listen(t)
	port := freePort(t)
	public := "https://127.0.0.1:" + port
	logs := &logtest.Buffer{}
	a, err := Open(Config{Config: config.Config{
		Server:  config.Server{PublicURL: public, TrustedProxies: []string{"127.0.0.1"}},
		Storage: config.Storage{DataDir: t.TempDir()}}, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	key, err := a.Svc.Bootstrap(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	serve(t, a, ln)

	dir := t.TempDir()
	site := strings.NewReplacer("munin.example.com", public, "127.0.0.1:8080", ln.Addr().String()).Replace(caddyfileOf(t))
	global := "{\n\tadmin off\n\tlocal_certs\n\tskip_install_trust\n\tauto_https disable_redirects\n\tdefault_bind 127.0.0.1\n\tstorage file_system " + filepath.Join(dir, "data") + "\n}\n\n"
	conf := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(conf, []byte(global+site), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(caddy, "run", "--config", conf, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	// Caddy's local authority writes its root, then the site answers.
	root := filepath.Join(dir, "data", "pki", "authorities", "local", "root.crt")
	var cli *http.Client
	for i := 0; ; i++ {
		if i == 200 {
			t.Fatalf("caddy did not come up within 20 s:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
		pem, err := os.ReadFile(root)
		if err != nil {
			continue
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		// The client calls from 127.0.0.2, so that it is not the trusted
		// proxy's address (127.0.0.1) itself.
		dial := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
		cli = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dial.DialContext, TLSClientConfig: &tls.Config{RootCAs: pool}}}
		if resp, err := cli.Get(public + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
	}

	resp, err := cli.Get(public + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Issuer string `json:"issuer"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || meta.Issuer != public {
		t.Errorf("discovery through caddy: %d issuer %q, want %s", resp.StatusCode, meta.Issuer, public)
	}

	post := func(auth string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, public+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"caddy-test","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-Forwarded-For", "203.0.113.66") // a client's lie: Caddy trusts no one before it
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := cli.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := post(""); r.StatusCode != http.StatusUnauthorized || !strings.Contains(r.Header.Get("WWW-Authenticate"), `resource_metadata="`+public+`/.well-known/oauth-protected-resource/mcp"`) {
		t.Errorf("401 through caddy: %d %q", r.StatusCode, r.Header.Get("WWW-Authenticate"))
	}
	if r := post(key); r.StatusCode != http.StatusOK {
		t.Errorf("initialize with a key through caddy: %d", r.StatusCode)
	}
	// The client Caddy reports (this test, from 127.0.0.2) is logged as
	// the remote, in the form trustProxies gives it; the lie is not.
	if log := logs.String(); !strings.Contains(log, "remote=127.0.0.2:0") || strings.Contains(log, "203.0.113.66") {
		t.Errorf("request log through caddy:\n%s", log)
	}
}
