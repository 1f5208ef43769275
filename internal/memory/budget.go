package memory

// Write budget defaults: a project's writes and content bytes per clock hour.
// The byte budget bounds what one project can add to the in-memory search
// index in an hour: the index costs about 2 bytes of heap per byte of prose
// and up to about 16 per byte of random words (README, "Memory").
const (
	// DefaultWriteBudget is the writes per project per hour.
	DefaultWriteBudget = 1000
	// DefaultWriteBudgetBytes is the content bytes per project per hour.
	DefaultWriteBudgetBytes = 16 << 20
)
