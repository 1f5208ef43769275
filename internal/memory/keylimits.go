package memory

import "time"

// Key limits of one project. They bound what a project admin (often an
// agent) can add to the control database and to the keys page; the command
// line, which the operator owns, is not limited.
const (
	// KeyCreationsPerHour is the keys one project may create in any hour,
	// revoked ones included: creating and revoking in a loop stops here.
	KeyCreationsPerHour = 100
	// MaxLiveKeys is the unrevoked keys one project may hold.
	MaxLiveKeys = 1000
)

// KeyCounts is what the key limits are checked against.
type KeyCounts struct {
	// CreatedSince counts the project's keys created in the window, revoked ones included.
	CreatedSince int
	// OldestSince is when the oldest of them was created (zero if none).
	OldestSince time.Time
	// Live counts the project's unrevoked keys.
	Live int
}
