package memory

import "time"

// KeyCounts is what the key limits are checked against.
type KeyCounts struct {
	// CreatedSince counts the project's keys created in the window, revoked ones included.
	CreatedSince int
	// OldestSince is when the oldest of them was created (zero if none).
	OldestSince time.Time
	// Live counts the project's unrevoked keys.
	Live int
}
