// Package embed turns entry texts into vectors through an OpenAI-compatible
// embedding endpoint (Ollama, llama.cpp server, vLLM,
// text-embeddings-inference, OpenAI) and keeps every live version of every
// project embedded, off the request path (Worker). It is optional: without
// an endpoint URL nothing in Munin calls it.
package embed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultTimeout bounds one call to the endpoint when ClientOptions.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// maxAnswer bounds the answer read from the endpoint: 32 texts × 4,096
// dimensions as JSON numbers fit many times over.
const maxAnswer = 64 << 20

// ClientOptions configure a Client.
type ClientOptions struct {
	// URL is the endpoint's base ("http://127.0.0.1:11434"), with or without
	// "/v1" or "/v1/embeddings".
	URL string
	// Model is the model name sent with every call ("nomic-embed-text").
	Model string
	// Key, when set, is sent as "Authorization: Bearer <key>"; it is never
	// logged nor put into an error.
	Key string
	// Timeout bounds one call (default DefaultTimeout).
	Timeout time.Duration
	// HTTP is the client to use (default: a new one).
	HTTP *http.Client
}

// Client calls POST {url}/v1/embeddings. It is safe for concurrent use.
type Client struct {
	endpoint string
	model    string
	key      string
	timeout  time.Duration
	http     *http.Client
	// dim is the dimension of the first good answer: a later answer of
	// another dimension is garbage (a model swapped behind the same name).
	dim atomic.Int64
}

// NewClient checks the options and builds a Client; it calls nothing.
func NewClient(opts ClientOptions) (*Client, error) {
	if opts.Model == "" {
		return nil, errors.New("embedding model is empty: set --embed-model (env MUNIN_EMBED_MODEL) with --embed-url")
	}
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("embedding URL %q must be http:// or https:// with a host", opts.URL)
	}
	u.User = nil // credentials go in MUNIN_EMBED_KEY, not in a URL that ends up in logs
	path := strings.TrimRight(u.Path, "/")
	switch {
	case strings.HasSuffix(path, "/v1/embeddings"):
	case strings.HasSuffix(path, "/v1"):
		path += "/embeddings"
	default:
		path += "/v1/embeddings"
	}
	u.Path = path
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.HTTP == nil {
		opts.HTTP = &http.Client{}
	}
	return &Client{endpoint: u.String(), model: opts.Model, key: opts.Key, timeout: opts.Timeout, http: opts.HTTP}, nil
}

// Model returns the model name the client asks for.
func (c *Client) Model() string { return c.model }

// Endpoint returns the URL the client posts to (no credentials in it).
func (c *Client) Endpoint() string { return c.endpoint }

// StatusError is an answer with a status other than 200.
type StatusError struct {
	Code int
	Body string // the start of the answer, for the log
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("embedding endpoint answered %d: %s", e.Code, e.Body)
}

// Permanent tells an answer that will not change by asking again with the
// same texts (a 4xx other than 408 and 429).
func (e *StatusError) Permanent() bool {
	return e.Code >= 400 && e.Code < 500 && e.Code != http.StatusRequestTimeout && e.Code != http.StatusTooManyRequests
}

type request struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type answer struct {
	Data []struct {
		Index     *int   `json:"index"`
		Embedding floats `json:"embedding"`
	} `json:"data"`
}

// floats is a JSON array of numbers read straight into float32s. Decoding
// thousands of numbers per answer through reflection cost more CPU than
// everything else the worker does; encoding/json has already checked that
// the array is valid JSON when UnmarshalJSON runs.
type floats []float32

// UnmarshalJSON parses [n, n, …]; a number beyond float32 is an error.
func (f *floats) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*f = nil
		return nil
	}
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return fmt.Errorf("embedding is not an array of numbers")
	}
	body := bytes.TrimSpace(b[1 : len(b)-1])
	out := make([]float32, 0, bytes.Count(body, []byte{','})+1)
	for len(body) > 0 {
		num, rest, _ := bytes.Cut(body, []byte{','})
		body = rest
		x, err := strconv.ParseFloat(string(bytes.TrimSpace(num)), 32)
		if err != nil {
			return fmt.Errorf("embedding number %q: %w", bytes.TrimSpace(num), err)
		}
		out = append(out, float32(x))
	}
	*f = out
	return nil
}

// Embed returns one vector per text, in order. Every failure is an error:
// a status other than 200, an answer that is not JSON, a count or a
// dimension that does not match, a number that is not finite, a zero vector.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	body, err := json.Marshal(request{Model: c.model, Input: texts})
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, fmt.Errorf("embed: read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{Code: resp.StatusCode, Body: c.answerText(raw)}
	}
	if len(raw) > maxAnswer {
		return nil, fmt.Errorf("embed: answer larger than %d bytes", maxAnswer)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return nil, fmt.Errorf("embed: answer is %q, not application/json: %s", resp.Header.Get("Content-Type"), c.answerText(raw))
	}
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("embed: answer is not the expected JSON: %w", err)
	}
	return c.vectors(a, len(texts))
}

// vectors checks an answer and orders its vectors by index.
func (c *Client) vectors(a answer, n int) ([][]float32, error) {
	if len(a.Data) != n {
		return nil, fmt.Errorf("embed: %d vectors for %d texts", len(a.Data), n)
	}
	out := make([][]float32, n)
	dim := int(c.dim.Load())
	for i, d := range a.Data {
		at := i
		if d.Index != nil {
			at = *d.Index
		}
		if at < 0 || at >= n || out[at] != nil {
			return nil, fmt.Errorf("embed: vector index %d is out of range or repeated", at)
		}
		if len(d.Embedding) == 0 {
			return nil, fmt.Errorf("embed: vector %d is empty", at)
		}
		if dim == 0 {
			dim = len(d.Embedding)
		}
		if len(d.Embedding) != dim {
			return nil, fmt.Errorf("embed: vector %d has %d dimensions, expected %d", at, len(d.Embedding), dim)
		}
		v := []float32(d.Embedding)
		zero := true
		for _, f := range v {
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return nil, fmt.Errorf("embed: vector %d holds %g, not a finite float32", at, f)
			}
			zero = zero && f == 0
		}
		if zero {
			return nil, fmt.Errorf("embed: vector %d is all zeros", at)
		}
		out[at] = v
	}
	c.dim.CompareAndSwap(0, int64(dim))
	return out, nil
}

// answerText is snippet with the key cut out: an endpoint (or a proxy in
// front of it) may quote the request's Authorization header in its error,
// which would carry the key into the log.
func (c *Client) answerText(raw []byte) string {
	if c.key != "" {
		// Only the start is shown: look as far as a key starting in it reaches.
		raw = bytes.ReplaceAll(raw[:min(len(raw), snippetMost+len(c.key))], []byte(c.key), []byte("[key]"))
	}
	return snippet(raw)
}

// snippetMost is how many bytes of an answer an error message shows.
const snippetMost = 200

// snippet is the start of an answer, printable, for an error message.
func snippet(b []byte) string {
	s := strings.ToValidUTF8(string(b[:min(len(b), snippetMost)]), "?")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(b) > snippetMost {
		s += "…"
	}
	return s
}
