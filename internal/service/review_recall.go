package service

import (
	"context"

	"munin/internal/memory"
)

// withPending adds the caller's own pending proposals that match the
// query to a recall's hits (stage 11, in progress: none yet).
func (s *Service) withPending(ctx context.Context, keys []memory.Key, req RecallRequest, hits []Hit) ([]Hit, error) {
	return hits, nil
}
