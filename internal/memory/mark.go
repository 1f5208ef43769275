package memory

import "errors"

// Mark names one change of a workspace: the id of its versions row — the
// workspace's change sequence, which grows with every write — and that
// version's creation time. The sequence alone cannot tell a workspace file
// from an older copy put back in its place (a restored backup reuses the
// ids after its last one); the time can. The zero Mark is "before the first
// change".
type Mark struct {
	Seq   int64
	Stamp int64 // unix nanoseconds of the version at Seq
}

// ErrUnknownMark is the answer to "what changed since this mark" when the
// database does not hold the change the mark names: whatever recorded the
// mark saw another history (a restored backup) and must start over.
var ErrUnknownMark = errors.New("the database does not hold this change (restored from an older copy?)")
