package replica

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Errors a Client returns, wrapped with the operation, database and socket.
var (
	// ErrUnreachable: nothing answers on the control socket (sidecar down or restarting).
	ErrUnreachable = errors.New("litestream sidecar unreachable")
	// ErrNotRegistered: the sidecar does not know the database (for example
	// after it restarted and before the database was registered again).
	ErrNotRegistered = errors.New("database not registered with litestream")
	// ErrNotReplicated: the sync answered but the replica is behind the local position.
	ErrNotReplicated = errors.New("replica is behind the local position")
	// ErrAlreadyRegistered: the database is registered at a replica URL this
	// client did not register; Litestream keeps the old URL, so unregister first.
	ErrAlreadyRegistered = errors.New("database already registered at another replica URL")
)

// defaultWaitSeconds is the server-side bound of a call whose context has no deadline.
const defaultWaitSeconds = 30

// Client talks HTTP to a `litestream replicate` control socket
// (litestream server.go). Paths are made absolute before they are sent,
// because Litestream identifies databases by absolute path.
type Client struct {
	socket string
	http   *http.Client

	mu   sync.Mutex
	urls map[string]string // absolute db path → replica URL registered through this client
}

// NewClient returns a client for the control socket at socket.
func NewClient(socket string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
	}
	return &Client{socket: socket, http: &http.Client{Transport: tr}, urls: map[string]string{}}
}

// Socket returns the control socket's path.
func (c *Client) Socket() string { return c.socket }

// Register starts replicating the SQLite file dbPath to replicaURL (e.g.
// EpochURL(base, ws, epoch)). Registering the same path at the same URL again
// is a no-op; at another URL it fails with ErrAlreadyRegistered. The file
// must exist (Litestream would accept a missing one and fail every sync).
func (c *Client) Register(ctx context.Context, dbPath, replicaURL string) error {
	p, err := abs(dbPath)
	if err != nil {
		return err
	}
	if _, err := os.Stat(p); err != nil {
		return c.wrap("register", p, err)
	}
	var resp struct {
		Status string `json:"status"`
	}
	req := map[string]any{"path": p, "replica_url": replicaURL}
	if err := c.call(ctx, http.MethodPost, "/register", req, &resp); err != nil {
		return c.wrap("register", p, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if resp.Status == "already_registered" && c.urls[p] != replicaURL {
		return c.wrap("register", p, fmt.Errorf("%w (wanted %s)", ErrAlreadyRegistered, replicaURL))
	}
	c.urls[p] = replicaURL
	return nil
}

// Unregister stops replicating dbPath: Litestream syncs what it has, closes
// the file and releases its read lock. It returns the last local TXID.
// Unregistering an unknown path succeeds with TXID 0.
func (c *Client) Unregister(ctx context.Context, dbPath string) (uint64, error) {
	p, err := abs(dbPath)
	if err != nil {
		return 0, err
	}
	var resp struct {
		TXID uint64 `json:"txid"`
	}
	req := map[string]any{"path": p, "timeout": waitSeconds(ctx)}
	if err := c.call(ctx, http.MethodPost, "/unregister", req, &resp); err != nil {
		return 0, c.wrap("unregister", p, err)
	}
	c.mu.Lock()
	delete(c.urls, p)
	c.mu.Unlock()
	return resp.TXID, nil
}

// syncResponse is litestream.SyncResponse.
type syncResponse struct {
	Status         string `json:"status"`
	TXID           uint64 `json:"txid"`
	ReplicatedTXID uint64 `json:"replicated_txid"`
}

// Sync copies every transaction committed to dbPath so far into the replica
// and waits for the upload (POST /sync wait=true). It succeeds only if the
// sidecar answered 200 and the replica's TXID reached the local one; the
// returned TXID is the replicated position. Call it after a commit and
// before acknowledging the commit.
func (c *Client) Sync(ctx context.Context, dbPath string) (uint64, error) {
	p, err := abs(dbPath)
	if err != nil {
		return 0, err
	}
	var resp syncResponse
	req := map[string]any{"path": p, "wait": true, "timeout": waitSeconds(ctx)}
	if err := c.call(ctx, http.MethodPost, "/sync", req, &resp); err != nil {
		return 0, c.wrap("sync", p, err)
	}
	if resp.ReplicatedTXID < resp.TXID {
		return 0, c.wrap("sync", p, fmt.Errorf("%w: local txid %d, replicated %d (status %q)",
			ErrNotReplicated, resp.TXID, resp.ReplicatedTXID, resp.Status))
	}
	return resp.ReplicatedTXID, nil
}

// TXID returns Litestream's local position of dbPath: the last transaction it
// has copied from the WAL into its local LTX files (GET /txid). Commits newer
// than Litestream's last look at the WAL (it looks every second, and on Sync)
// are not counted.
func (c *Client) TXID(ctx context.Context, dbPath string) (uint64, error) {
	p, err := abs(dbPath)
	if err != nil {
		return 0, err
	}
	var resp struct {
		TXID uint64 `json:"txid"`
	}
	if err := c.call(ctx, http.MethodGet, "/txid?path="+url.QueryEscape(p), nil, &resp); err != nil {
		return 0, c.wrap("txid", p, err)
	}
	return resp.TXID, nil
}

// Lag is how far the replica of one database is behind its file.
type Lag struct {
	// TXID is the local position after Litestream read the WAL just now
	// (its last known position if it could not: see ReplicaError).
	TXID uint64
	// ReplicatedTXID is the last TXID the replica confirmed. It is 0 right
	// after registration until the first upload, and after a failed upload.
	ReplicatedTXID uint64
	// Behind = TXID − ReplicatedTXID: transactions Litestream holds locally
	// but the replica does not (one Litestream transaction covers every
	// commit since its previous look at the WAL).
	Behind uint64
	// LastSyncAt is when an upload to the replica last succeeded (zero if never).
	LastSyncAt time.Time
	// ReplicaError is the sidecar's message when it could not work out the
	// replica's position (replica unreachable); ReplicatedTXID is then 0 and
	// Behind undercounts (Litestream stops reading the WAL meanwhile): treat
	// the replica as past any lag bound.
	ReplicaError string
}

// Lag measures the replica lag of dbPath for async mode and the metric:
// POST /sync without wait (Litestream reads the WAL, the upload stays on its
// 1 s schedule) gives both TXIDs, GET /list the time of the last upload.
// Litestream reads no WAL while it cannot reach the replica; Lag then reports
// its last local TXID as all behind, with ReplicaError set. Lag fails only if
// the sidecar does not answer or does not know dbPath.
func (c *Client) Lag(ctx context.Context, dbPath string) (Lag, error) {
	p, err := abs(dbPath)
	if err != nil {
		return Lag{}, err
	}
	var lag Lag
	var resp syncResponse
	req := map[string]any{"path": p, "wait": false, "timeout": waitSeconds(ctx)}
	err = c.call(ctx, http.MethodPost, "/sync", req, &resp)
	var se *statusError
	switch {
	case err == nil:
		lag.TXID, lag.ReplicatedTXID = resp.TXID, resp.ReplicatedTXID
	case errors.As(err, &se) && se.status == http.StatusInternalServerError:
		lag.ReplicaError = se.msg
		if lag.TXID, err = c.TXID(ctx, p); err != nil {
			return Lag{}, err
		}
	default:
		return Lag{}, c.wrap("lag", p, err)
	}
	if lag.TXID > lag.ReplicatedTXID {
		lag.Behind = lag.TXID - lag.ReplicatedTXID
	}
	var list struct {
		Databases []struct {
			Path       string     `json:"path"`
			LastSyncAt *time.Time `json:"last_sync_at"`
		} `json:"databases"`
	}
	if err := c.call(ctx, http.MethodGet, "/list", nil, &list); err != nil {
		return Lag{}, c.wrap("lag", p, err)
	}
	for _, d := range list.Databases {
		if d.Path == p && d.LastSyncAt != nil {
			lag.LastSyncAt = *d.LastSyncAt
		}
	}
	return lag, nil
}

// ping checks that the sidecar answers (GET /info).
func (c *Client) ping(ctx context.Context) error {
	var info struct {
		Version string `json:"version"`
	}
	return c.call(ctx, http.MethodGet, "/info", nil, &info)
}

// forget drops what this client registered; the sidecar behind it restarted.
func (c *Client) forget() {
	c.mu.Lock()
	c.urls = map[string]string{}
	c.mu.Unlock()
}

// statusError is a non-200 answer with the sidecar's own message.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.status, e.msg) }

// Unwrap maps 404 (the sidecar's "database not found") to ErrNotRegistered.
func (e *statusError) Unwrap() error {
	if e.status == http.StatusNotFound {
		return ErrNotRegistered
	}
	return nil
}

// call sends one request and decodes a 200 answer into out.
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://litestream"+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%w: read answer: %v", ErrUnreachable, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error   string `json:"error"`
			Details any    `json:"details"`
		}
		msg := string(bytes.TrimSpace(b))
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			msg = e.Error
			if e.Details != nil {
				msg += fmt.Sprintf(" (%v)", e.Details)
			}
		}
		return &statusError{status: resp.StatusCode, msg: msg}
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decode answer %q: %w", b, err)
	}
	return nil
}

// wrap names the operation, the database and the socket.
func (c *Client) wrap(op, db string, err error) error {
	return fmt.Errorf("litestream %s %s via %s: %w", op, db, c.socket, err)
}

// waitSeconds turns ctx's deadline into the sidecar's timeout in whole
// seconds (rounded up), so that the sidecar gives up no earlier than we do.
func waitSeconds(ctx context.Context) int {
	dl, ok := ctx.Deadline()
	if !ok {
		return defaultWaitSeconds
	}
	s := math.Ceil(time.Until(dl).Seconds())
	if s < 1 {
		return 1
	}
	return int(s)
}

func abs(p string) (string, error) {
	if p == "" {
		return "", errors.New("database path is empty")
	}
	a, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("database path %s: %w", p, err)
	}
	return a, nil
}
