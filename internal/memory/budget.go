package memory

// Write budget defaults: a project's writes and content bytes per clock hour.
// The byte budget bounds what one project can add to the in-memory search
// index in an hour: the index costs about 1.1 bytes of live heap per byte of
// prose and about 8 per byte of random words (search's memory benchmark), so
// 16 MiB/h add at most about 130 MiB/h, ~3 % of a 4 GB server.
const (
	// DefaultWriteBudget is the writes per project per hour.
	DefaultWriteBudget = 1000
	// DefaultWriteBudgetBytes is the content bytes per project per hour.
	DefaultWriteBudgetBytes = 16 << 20
)
