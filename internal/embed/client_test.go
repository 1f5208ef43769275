package embed

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"munin/internal/embed/embedtest"
)

func newEndpoint(t *testing.T, dim int) *embedtest.Server {
	t.Helper()
	s := embedtest.New(dim)
	t.Cleanup(s.Close)
	return s
}

func newClient(t *testing.T, url string, opts ClientOptions) *Client {
	t.Helper()
	opts.URL, opts.Model = url, "test-model"
	c, err := NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClientEmbeds(t *testing.T) {
	ep := newEndpoint(t, 8)
	for _, base := range []string{ep.URL, ep.URL + "/", ep.URL + "/v1", ep.URL + "/v1/", ep.URL + "/v1/embeddings"} {
		c := newClient(t, base, ClientOptions{Key: "sekret"})
		if !strings.HasSuffix(c.Endpoint(), "/v1/embeddings") || strings.Contains(c.Endpoint(), "/v1/v1") {
			t.Fatalf("%s: endpoint %s", base, c.Endpoint())
		}
		vs, err := c.Embed(context.Background(), []string{"alpha beta", "gamma"})
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		if len(vs) != 2 || len(vs[0]) != 8 || vs[0][0] != float32(embedtest.Vector("alpha beta", 8)[0]) {
			t.Fatalf("%s: vectors %v", base, vs)
		}
		if ep.Authorization() != "Bearer sekret" {
			t.Fatalf("Authorization = %q", ep.Authorization())
		}
	}
	c := newClient(t, ep.URL, ClientOptions{})
	if _, err := c.Embed(context.Background(), []string{"x"}); err != nil || ep.Authorization() != "" {
		t.Fatalf("without a key: %v, Authorization %q", err, ep.Authorization())
	}
}

func TestClientOptions(t *testing.T) {
	for _, o := range []ClientOptions{
		{URL: "http://h", Model: ""},
		{URL: "ftp://h", Model: "m"},
		{URL: "127.0.0.1:11434", Model: "m"},
		{URL: "http://", Model: "m"},
	} {
		if _, err := NewClient(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	c, err := NewClient(ClientOptions{URL: "http://user:pw@h:1/", Model: "m"})
	if err != nil || strings.Contains(c.Endpoint(), "pw") {
		t.Fatalf("credentials in the URL: %v, %s", err, c.Endpoint())
	}
}

// Every kind of garbage is an error, never a vector.
func TestClientRefusesGarbage(t *testing.T) {
	ep := newEndpoint(t, 8)
	for _, m := range []struct {
		name string
		mode embedtest.Mode
		want string
	}{
		{"500", embedtest.Status500, "answered 500"},
		{"html", embedtest.HTML, "not application/json"},
		{"nan", embedtest.NaN, "not the expected JSON"},
		{"bloated", embedtest.Bloated, "larger than"},
		{"huge", embedtest.Huge, "out of range"},
		{"dims", embedtest.WrongDim, "dimensions"},
		{"count", embedtest.WrongCount, "vectors for"},
	} {
		ep.SetMode(m.mode)
		c := newClient(t, ep.URL, ClientOptions{Key: "sekret"})
		vs, err := c.Embed(context.Background(), []string{"a", "b", "c"})
		if err == nil || !strings.Contains(err.Error(), m.want) || vs != nil {
			t.Errorf("%s: %v, %v; want error with %q", m.name, vs, err, m.want)
		}
		if err != nil && strings.Contains(err.Error(), "sekret") {
			t.Errorf("%s: error shows the key", m.name)
		}
	}
	// Only 400, 413 and 422 refuse the text; every other status is the
	// endpoint failing (a rotated key, a wrong URL, a crash) and passes.
	for code, refuses := range map[int]bool{400: true, 413: true, 422: true, 401: false, 403: false, 404: false, 405: false, 408: false, 429: false, 500: false, 503: false} {
		ep.Fail(code)
		var se *StatusError
		if _, err := newClient(t, ep.URL, ClientOptions{}).Embed(context.Background(), []string{"a"}); !errors.As(err, &se) || se.RefusesText() != refuses {
			t.Errorf("%d: %v, want a status error refusing the text: %v", code, err, refuses)
		}
	}
}

// A later answer of another dimension than the first is refused.
func TestClientKeepsDimension(t *testing.T) {
	ep8, ep9 := newEndpoint(t, 8), newEndpoint(t, 9)
	c := newClient(t, ep8.URL, ClientOptions{})
	if _, err := c.Embed(context.Background(), []string{"a"}); err != nil {
		t.Fatal(err)
	}
	c.endpoint = ep9.URL + "/v1/embeddings"
	if _, err := c.Embed(context.Background(), []string{"a"}); err == nil || !strings.Contains(err.Error(), "expected 8") {
		t.Fatalf("dimension change: %v", err)
	}
}

func TestClientTimeout(t *testing.T) {
	ep := newEndpoint(t, 8)
	ep.SetMode(embedtest.Block)
	c := newClient(t, ep.URL, ClientOptions{Timeout: 50 * time.Millisecond})
	if _, err := c.Embed(context.Background(), []string{"a"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("blocked endpoint: %v, want deadline exceeded", err)
	}
	ep.SetMode(embedtest.OK)
}

func TestFloatsUnmarshal(t *testing.T) {
	for in, want := range map[string]string{
		`[1, -2.5e-3 ,3]`: "[1 -0.0025 3]",
		` [ ] `:           "[]",
		`[0.1]`:           "[0.1]",
		`null`:            "[]",
	} {
		var f floats
		if err := f.UnmarshalJSON([]byte(in)); err != nil || fmt.Sprint([]float32(f)) != want {
			t.Errorf("%s: %v, %v; want %s", in, f, err, want)
		}
	}
	for _, in := range []string{`[1,,2]`, `{}`, `["1"]`, `[1e39]`, `[true]`} {
		var f floats
		if err := f.UnmarshalJSON([]byte(in)); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}
