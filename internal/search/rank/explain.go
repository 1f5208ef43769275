package rank

// Explanations. A match found by tier 1 or 2 (a compound's parts, a
// compound of query words, a typo's correction) carries the alternatives
// its tier searched, so that the hit can say how it matched (memory.Hit's
// Explanation, internal/search/explain.go). The tier's query matched the
// entry by at least one of them; which one is found by looking for their
// terms in the entry's title and content, for the few hits of a lower tier
// only: tier 0 and its fast path (topk.go) carry nothing.

// Alt is one alternative a lower tier searched: the query word (or the two
// joined words), what it was met as, and the terms of each part, every
// part in the title or content for the entry to match.
type Alt struct {
	// Kind is AltSplit, AltJoin or AltTypo.
	Kind string
	// Word is the query word in lower case, or the two joined words
	// separated by a space, in the query's order.
	Word string
	// Known is what Word was met as: the parts of a split, the compound of
	// a join, the correction of a typo.
	Known []string
	// Parts are the terms searched for each part of Known.
	Parts [][]string
}

// The kinds of Alt.
const (
	AltSplit = altSplit // a query compound met by its parts
	AltJoin  = altJoin  // neighbouring query words met as one compound
	AltTypo  = altTypo  // an unknown query word met by a known term one edit away
)

// exported lists alts as Alts.
func exported(alts []alt) []Alt {
	out := make([]Alt, len(alts))
	for i, a := range alts {
		out[i] = Alt{Kind: a.kind, Word: a.word, Known: a.known, Parts: a.parts}
	}
	return out
}

// alts is what a pass's matches carry: nil for tier 0, else the
// alternatives the tier searched.
func (p pass) alts() []Alt {
	switch p.tier {
	case 0:
		return nil
	case 1:
		return exported(p.exp.compounds)
	default:
		return exported(p.exp.typos)
	}
}
