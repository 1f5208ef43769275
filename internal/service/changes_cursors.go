package service

import "munin/internal/feedcursor"

// perChangeCursors is the cursor after each change of an answer
// (ChangesRequest.PerChange), from the same read: after change i every
// workspace stands where nextCursor would put it had the answer ended at
// i — the merge takes a prefix of each workspace's page, so that is after
// the rows of it taken up to i. from[i] is the workspace of change i
// (mergeFeeds). The live stream gives each event its cursor this way, one
// read per page instead of one per change.
func perChangeCursors(secret []byte, in feedcursor.Cursor, wss []*feedWorkspace, from []int, now int64) []string {
	if len(from) == 0 {
		return nil
	}
	kept := keptPositions(in, wss)
	taken := make([]int, len(wss))
	out := make([]string, len(from))
	for i, w := range from {
		taken[w]++
		out[i] = feedcursor.Encode(secret, cursorAt(wss, taken, kept, now))
	}
	return out
}
