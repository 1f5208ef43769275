package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
)

// feedSecretKey names the change feed's cursor secret in the control
// database's settings table.
const feedSecretKey = "feed_cursor_secret"

// FeedSecret returns the secret the change feed signs its cursors with
// (package feedcursor). A single server draws it once, the first time it is
// asked, and keeps it in its control database: cursors survive restarts
// and are refused by any other server. (A cluster node's router derives it
// from the cluster secret instead, so that every node accepts every node's
// cursors; see remote.Router.FeedSecret.)
func (s *Store) FeedSecret(ctx context.Context) ([]byte, error) {
	if p := s.feedSecret.Load(); p != nil {
		return *p, nil // every Changes call asks: a control read each time was a third of a stream's CPU
	}
	secret, err := s.readFeedSecret(ctx)
	if err == nil || !errors.Is(err, sql.ErrNoRows) {
		return secret, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("draw the feed secret: %w", err)
	}
	// Two first calls at once: OR IGNORE keeps whichever came first, and
	// both read that one back.
	if _, err := s.control.writer.ExecContext(ctx, `INSERT OR IGNORE INTO settings (k, v) VALUES (?, ?)`,
		feedSecretKey, hex.EncodeToString(b)); err != nil {
		return nil, fmt.Errorf("store the feed secret: %w", err)
	}
	return s.readFeedSecret(ctx)
}

// readFeedSecret reads the secret and caches it.
func (s *Store) readFeedSecret(ctx context.Context) ([]byte, error) {
	var v string
	if err := s.control.reader.QueryRowContext(ctx, `SELECT v FROM settings WHERE k = ?`, feedSecretKey).Scan(&v); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		return nil, fmt.Errorf("read the feed secret: %w", err)
	}
	b, err := hex.DecodeString(v)
	if err != nil || len(b) < 16 {
		return nil, fmt.Errorf("the feed secret in the control database is damaged (%d bytes)", len(b))
	}
	s.feedSecret.Store(&b)
	return b, nil
}
