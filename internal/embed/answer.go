package embed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
)

// MaxDimension is the most dimensions a vector may have. The largest
// embedding models in use answer 4,096 (text-embedding-3-large: 3,072); a
// vector wider than this is refused, so an answer's size can be bounded.
const MaxDimension = 8192

// The size of an answer is bounded by what its vectors can take, so a
// query embedding reads no more than a few hundred KB whatever the endpoint
// sends, and a batch proportionally more.
const (
	// numberBytes is the most one number of a vector takes in an answer:
	// "-0.012345678901234567," is 22 bytes, one pretty-printed on its own
	// indented line about 30.
	numberBytes = 32
	// vectorBytes is one vector of MaxDimension numbers with the
	// {"object":"embedding","index":n,"embedding":[…]} around it.
	vectorBytes = MaxDimension*numberBytes + 1<<10
	// answerSlack is the rest of an answer ("model", "usage", …).
	answerSlack = 16 << 10
)

// answerCap is the most bytes read of an answer to n texts: 273 KiB for a
// query, 8.0 MiB for a batch of memory.MaxEmbedBatch (32).
func answerCap(n int) int64 { return int64(n)*vectorBytes + answerSlack }

// The answers being read at once are bounded too, not only each one: a
// burst of recalls against an endpoint that answers huge bodies holds at
// most maxQueryReads × answerCap(1) ≈ 4.3 MiB, the worker's batches at most
// maxBatchReads × answerCap(32) ≈ 32 MiB. Queries have their own turns so
// that batches never hold them up. A call waits for its turn within its
// deadline (for a recall, the 2 s of the meaning path).
const (
	maxQueryReads = 16
	maxBatchReads = 4
)

// statusDrain is how much of an error answer is read (and thrown away) so
// the connection can be reused.
const statusDrain = 4 << 10

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

// StatusError is an answer with a status other than 200. It holds the
// status only: the body is never read into an error or the log, since an
// endpoint may quote its input (memory content) in it.
type StatusError struct {
	Code int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("embedding endpoint answered %d %s: %s", e.Code, http.StatusText(e.Code), e.reason())
}

// reason is a fixed text for the status: what it means for Munin.
func (e *StatusError) reason() string {
	switch {
	case e.RefusesText():
		return "it refuses the text (too long or not accepted)"
	case e.Code == http.StatusUnauthorized:
		return "it refuses the key; check MUNIN_EMBED_KEY"
	case e.Code == http.StatusForbidden:
		return "the key may not use it or the model; check MUNIN_EMBED_KEY and --embed-model"
	case e.Code == http.StatusNotFound:
		return "no such endpoint or model; check --embed-url and --embed-model"
	case e.Code == http.StatusTooManyRequests || e.Code == http.StatusRequestTimeout:
		return "it is busy; will retry"
	case e.Code >= 500:
		return "it failed; will retry"
	default:
		return "unexpected status; will retry"
	}
}

// RefusesText tells an answer that refuses the texts themselves and will
// again, whenever asked (400, 413, 422): the worker then skips the text it
// refuses alone. Every other status is a failure of the endpoint — a
// rotated key (401, 403), a wrong URL or model (404), overload, a crash —
// that passes, so the worker retries with backoff and skips nothing.
func (e *StatusError) RefusesText() bool {
	switch e.Code {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

// readAnswer reads the answer to n texts: status 200, JSON, at most
// answerCap(n) bytes, read in its turn (see maxQueryReads). The call's
// deadline (ctx) bounds the wait for the turn and the read.
func (c *Client) readAnswer(ctx context.Context, resp *http.Response, n int) ([]byte, error) {
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, statusDrain))
		return nil, &StatusError{Code: resp.StatusCode}
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return nil, errors.New("embed: answer is not application/json")
	}
	limit := answerCap(n)
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("embed: answer of %d bytes is larger than %d, the most for %d texts of up to %d dimensions",
			resp.ContentLength, limit, n, MaxDimension)
	}
	turns := c.batchReads
	if n == 1 {
		turns = c.queryReads
	}
	select {
	case turns <- struct{}{}:
		defer func() { <-turns }()
	case <-ctx.Done():
		return nil, fmt.Errorf("embed: wait to read the answer: %w", context.Cause(ctx))
	}
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength) + 1)
	}
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, limit+1)); err != nil {
		if ctx.Err() != nil {
			err = context.Cause(ctx) // the deadline, not the transport's words for it
		}
		return nil, fmt.Errorf("embed: read answer: %w", err)
	}
	if int64(buf.Len()) > limit {
		return nil, fmt.Errorf("embed: answer is larger than %d bytes, the most for %d texts of up to %d dimensions",
			limit, n, MaxDimension)
	}
	return buf.Bytes(), nil
}

// answerError is a fault of an answer's vectors, in Munin's words: it
// names no part of the answer.
type answerError string

func (e answerError) Error() string { return string(e) }

var (
	errNotArray  = answerError("embedding is not an array of numbers")
	errNotNumber = answerError("embedding holds something that is not a number")
	errRange     = answerError("embedding holds a number out of range of float32")
	errTooWide   = answerError(fmt.Sprintf("embedding has more than %d dimensions, the most Munin accepts", MaxDimension))
)

// floats is a JSON array of numbers read straight into float32s. Decoding
// thousands of numbers per answer through reflection cost more CPU than
// everything else the worker does; encoding/json has already checked that
// the array is valid JSON when UnmarshalJSON runs.
type floats []float32

// UnmarshalJSON parses [n, n, …]; a number beyond float32 or more than
// MaxDimension of them is an error (counted before anything is allocated).
func (f *floats) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*f = nil
		return nil
	}
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return errNotArray
	}
	body := bytes.TrimSpace(b[1 : len(b)-1])
	n := bytes.Count(body, []byte{','}) + 1
	if n > MaxDimension {
		return errTooWide
	}
	out := make([]float32, 0, n)
	for len(body) > 0 {
		num, rest, _ := bytes.Cut(body, []byte{','})
		body = rest
		x, err := strconv.ParseFloat(string(bytes.TrimSpace(num)), 32)
		if errors.Is(err, strconv.ErrRange) {
			return errRange
		}
		if err != nil {
			return errNotNumber
		}
		out = append(out, float32(x))
	}
	*f = out
	return nil
}
