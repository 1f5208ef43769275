package memory

import "slices"

// HasTags reports whether tags holds every one of want, compared exactly:
// the rule of a recall's tag filter, shared by the paths that filter
// outside the keyword index (hits found by meaning, the caller's pending
// proposals) so that every path keeps the same hits for the same tags.
func HasTags(tags, want []string) bool {
	for _, w := range want {
		if !slices.Contains(tags, w) {
			return false
		}
	}
	return true
}
