package memory

// The limits of Munin, in one table. The service checks them; transports,
// the store and the index take them from here and restate none. Only the
// caps on a transport's own state stay with it, beside the code that
// evicts: MCP sessions and streams (mcpserver, their numbers are flags) and
// web sign-in sessions (web/session.go).
const (
	// DefaultMaxContent is the default limit of an entry's content in bytes
	// (the server's --max-content flag changes it).
	DefaultMaxContent = 64 << 10
	// MaxTitle is the limit of a title in bytes.
	MaxTitle = 512
	// MaxTags is the most tags one entry may carry.
	MaxTags = 32
	// MaxTag is the limit of one tag in bytes.
	MaxTag = 64
	// MaxAgent is the limit of an agent name in bytes.
	MaxAgent = 128
	// MaxIdempotencyKey is the limit of an idempotency key in bytes.
	MaxIdempotencyKey = 128
	// MaxQuery is the limit of a recall query in bytes.
	MaxQuery = 1024
	// MaxQueryTerms is the most distinct terms a recall searches for, counted
	// after analysis (function words dropped, words of one stem counted once).
	// Each term is a search over every text field, so this bounds a recall's CPU.
	MaxQueryTerms = 32
	// MaxSupersedes is the most slugs one remember may supersede.
	MaxSupersedes = 16
	// MaxValidYears is how far ahead valid_until may lie, in years.
	MaxValidYears = 100
	// MaxSimilar is the most similar entries a remember's answer names.
	MaxSimilar = 3
	// MaxPendingProposals is the most proposals one project holds waiting
	// for review; a proposal beyond it is refused (budget_exhausted) until a
	// reviewer decides some. It bounds the review queue a person faces and
	// what a proposer's recall scans of its own pending proposals.
	MaxPendingProposals = 500
	// MaxReason is the limit of a rejection's reason in bytes.
	MaxReason = 1024
	// MaxPrefix is the limit of list's prefix in bytes.
	MaxPrefix = 128
	// MaxCursor is the limit of list's cursor in bytes.
	MaxCursor = 512

	// DefaultRecallLimit and MaxRecallLimit bound the hits of one recall
	// (across all projects of the caller together).
	DefaultRecallLimit = 10
	MaxRecallLimit     = 50
	// DefaultListLimit and MaxListLimit bound one page of list (and of the
	// web UI's entry pages).
	DefaultListLimit = 50
	MaxListLimit     = 200
	// DefaultHistoryLimit and MaxHistoryLimit bound one page of history and
	// of the audit and search logs.
	DefaultHistoryLimit = 50
	MaxHistoryLimit     = 200
	// DefaultMissedLimit and MaxMissedLimit bound the list of queries
	// without hits (the web UI's search log).
	DefaultMissedLimit = 20
	MaxMissedLimit     = 200

	// MaxCallerKeys is the most keys one request may carry (Authorization:
	// Bearer munin_a,munin_b,…): one agent, up to this many projects.
	MaxCallerKeys = 16
	// MaxKeyToken is the longest key the server reads (a key is 49 bytes;
	// anything longer is refused unread).
	MaxKeyToken = 256

	// DefaultWriteBudget is the writes per project per hour.
	DefaultWriteBudget = 1000
	// DefaultWriteBudgetBytes is the content bytes per project per hour. It
	// bounds what one project can add to the workspace file and the search
	// index in an hour: 16 MiB/h of text become at most about 12 MiB/h of
	// index on disk (0.7 bytes per byte) and 40-80 bytes of heap per byte
	// only while a refresh batch is analysed.
	DefaultWriteBudgetBytes = 16 << 20

	// KeyCreationsPerHour is the keys one project may create in any hour,
	// revoked ones included: creating and revoking in a loop stops here. The
	// command line, which the operator owns, is not limited.
	KeyCreationsPerHour = 100
	// MaxLiveKeys is the unrevoked keys one project may hold.
	MaxLiveKeys = 1000

	// MaxEmbedText is the most characters (runes) of an entry sent to an
	// embedding endpoint: title, tags and the start of the content. It keeps
	// a text within the context of small models (about 512 tokens) and
	// bounds what one batch costs; the rest of a long entry is still found by
	// words.
	MaxEmbedText = 2000
	// MaxEmbedBatch is the most texts one call to an embedding endpoint carries.
	MaxEmbedBatch = 32
)
