package store

import "munin/internal/service"

// The service's Store contract is implemented exactly.
var _ service.Store = (*Store)(nil)
