package remote

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"munin/internal/memory"
)

// Client makes internal calls to other nodes.
type Client struct {
	// Secret is the cluster secret.
	Secret string
	// HTTP is the client used (nil: one with a 30 s timeout per call).
	HTTP *http.Client
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return defaultHTTP
}

var defaultHTTP = &http.Client{Timeout: 30 * time.Second}

// Target is where a workspace's calls go: this node, or the owner's base URL
// at the epoch the route was learnt.
type Target struct {
	Self  bool
	URL   string
	Epoch int64
}

// invoke calls method on the owner n with arguments a.
// A failure to reach the owner or to read its answer is unavailable: the
// call may or may not have been carried out there.
func invoke[A, R any](ctx context.Context, n node, method string, a A) (R, error) {
	var out reply[R]
	var body bytes.Buffer
	if err := encode(&body, a); err != nil {
		return out.Val, fmt.Errorf("internal call %s: encode: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.url+PathPrefix+method, &body)
	if err != nil {
		return out.Val, fmt.Errorf("internal call %s to %s: %w", method, n.url, err)
	}
	req.Header.Set("Authorization", "Bearer "+n.c.Secret)
	req.Header.Set("Content-Type", contentType)
	for _, cl := range n.claims {
		req.Header.Add(headerClaim, cl.Workspace+"="+strconv.FormatInt(cl.Epoch, 10))
	}
	resp, err := n.c.http().Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return out.Val, ctx.Err()
		}
		return out.Val, unreachable(n, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return out.Val, unreachable(n, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(msg)))
	}
	if err := decode(resp.Body, &out); err != nil {
		return out.Val, unreachable(n, fmt.Errorf("read answer: %w", err))
	}
	return out.Val, out.Err.fromWire()
}

// unreachable is the error of a hop that failed on the way.
func unreachable(n node, err error) error {
	ws := ""
	if len(n.claims) > 0 {
		ws = " " + n.claims[0].Workspace
	}
	return &memory.Error{
		Code:    memory.CodeUnavailable,
		Message: fmt.Sprintf("the node that owns workspace%s did not answer; retry", ws),
		Err:     fmt.Errorf("call %s: %w", n.url, err),
	}
}
