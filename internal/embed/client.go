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
	"math"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultTimeout bounds one call to the endpoint when ClientOptions.Timeout is zero.
const DefaultTimeout = 30 * time.Second

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
	// queryReads and batchReads are the turns to read an answer of one
	// text and of more (see maxQueryReads).
	queryReads, batchReads chan struct{}
	health                 health
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
	return &Client{endpoint: u.String(), model: opts.Model, key: opts.Key, timeout: opts.Timeout, http: opts.HTTP,
		queryReads: make(chan struct{}, maxQueryReads), batchReads: make(chan struct{}, maxBatchReads)}, nil
}

// Model returns the model name the client asks for.
func (c *Client) Model() string { return c.model }

// Endpoint returns the URL the client posts to (no credentials in it).
func (c *Client) Endpoint() string { return c.endpoint }

// Embed returns one vector per text, in order. Every failure is an error:
// a status other than 200, an answer that is not JSON, too large, of a
// count or a dimension that does not match, a number that is not finite, a
// zero vector. No error quotes the answer: an endpoint may quote its input,
// which is memory content, and errors end up in the log.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	vs, err := c.embed(ctx, texts)
	c.health.record(ctx, err)
	return vs, err
}

func (c *Client) embed(ctx context.Context, texts []string) ([][]float32, error) {
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
	raw, err := c.readAnswer(ctx, resp, len(texts))
	if err != nil {
		return nil, err
	}
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil {
		var ae answerError
		if errors.As(err, &ae) {
			return nil, fmt.Errorf("embed: %w", ae)
		}
		// Not err itself: a type error names no value, but a syntax error
		// quotes a byte of the answer, and the answer may quote the input.
		return nil, errors.New("embed: answer is not the expected JSON")
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
