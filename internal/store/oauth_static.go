package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"munin/internal/memory"
)

// SetStaticOAuthClients makes the configured clients (kind static) exactly
// clients, in one transaction: each is stored or updated, and a static
// client no longer configured is deleted with its sign-ins, so that
// removing a client from the configuration ends its tokens at the next
// start. An id taken by a registered or fetched client is a conflict and
// changes nothing.
func (s *Store) SetStaticOAuthClients(ctx context.Context, clients []memory.OAuthClient) error {
	tx, err := s.control.writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("set static oauth clients: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	keep := map[string]bool{}
	now := time.Now().UnixNano()
	for _, c := range clients {
		keep[c.ID] = true
		js, err := json.Marshal(c.RedirectURIs)
		if err != nil {
			return fmt.Errorf("set static oauth clients: %w", err)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO oauth_clients (id, kind, name, redirect_uris, created_at)
			VALUES (?, 'static', ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET name = excluded.name, redirect_uris = excluded.redirect_uris
			WHERE oauth_clients.kind = 'static'`, c.ID, c.Name, string(js), now)
		if err != nil {
			return fmt.Errorf("set static oauth clients: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return memory.Errorf(memory.CodeConflict, "configured OAuth client %q: the id is taken by a registered client", c.ID)
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT id FROM oauth_clients WHERE kind = 'static'`)
	if err != nil {
		return fmt.Errorf("set static oauth clients: %w", err)
	}
	var gone []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("set static oauth clients: %w", err)
		}
		if !keep[id] {
			gone = append(gone, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("set static oauth clients: %w", err)
	}
	for _, id := range gone {
		// The grants' codes, tokens and key ids go with them (ON DELETE CASCADE).
		if _, err := tx.ExecContext(ctx, `DELETE FROM oauth_grants WHERE client_id = ?`, id); err != nil {
			return fmt.Errorf("set static oauth clients: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM oauth_clients WHERE id = ?`, id); err != nil {
			return fmt.Errorf("set static oauth clients: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("set static oauth clients: commit: %w", err)
	}
	return nil
}
