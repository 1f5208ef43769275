package service

import (
	"context"
	"sync"
	"time"
)

// oauthPruneEvery is how often a sign-in also deletes expired codes and
// tokens and long-dead grants (OAuthStore.PruneOAuth, a bounded batch per
// call): sign-ins are rare, so the control database's writer spends a few
// milliseconds on it at most once an hour, and expired rows cannot pile
// up faster than people sign in.
const oauthPruneEvery = time.Hour

// oauthPruner remembers when OAuth rows were last pruned.
type oauthPruner struct {
	mu   sync.Mutex
	last time.Time
}

// due reports whether a prune is due at now, and if so records it.
func (p *oauthPruner) due(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.last.IsZero() && now.Sub(p.last) < oauthPruneEvery {
		return false
	}
	p.last = now
	return true
}

// pruneOAuth deletes one bounded batch of dead OAuth rows if due. A
// failure is logged, never the sign-in's: the rows are dead either way.
func (s *Service) pruneOAuth(ctx context.Context, o *OAuthOptions) {
	now := s.opts.Now()
	if !s.oauthPrune.due(now) {
		return
	}
	if n, err := o.Store.PruneOAuth(ctx, now); err != nil {
		s.log.Warn("prune expired OAuth codes and tokens", "err", err)
	} else if n > 0 {
		s.log.Debug("pruned expired OAuth codes and tokens", "rows", n)
	}
}
