package index

// Idle indexes are closed, so that many projects touched once do not hold
// their indexes' memory for ever: a closed index costs nothing, and its next
// search opens it from disk and catches up with the writes made meanwhile
// (writes to a closed index cost no index work at all). The registry decides
// when (its idle time); CloseIfIdle does it safely.

// LastUse is when a search or write last used the index, in unix
// nanoseconds.
func (p *Project) LastUse() int64 { return p.lastUse.Load() }

// CloseIfIdle closes the index if it is open, unused since cutoff, and no
// one is opening it or applying a batch to it (those go first: the index is
// wanted). It tells whether it closed it.
func (p *Project) CloseIfIdle(cutoff int64) bool {
	if !p.mu.TryLock() {
		return false
	}
	defer p.mu.Unlock()
	if p.Current() == nil || p.lastUse.Load() >= cutoff {
		return false
	}
	p.qmu.Lock()
	busy := p.building != nil || p.collecting != nil || p.applying != nil
	p.qmu.Unlock()
	if busy {
		return false
	}
	p.closeLocked(true)
	return true
}

// Rebuild builds the index anew from the Source, replacing the one on disk,
// and returns how many documents it holds.
func (p *Project) Rebuild() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropLocked()
	idx, err := p.build()
	if err != nil {
		return 0, err
	}
	p.setIndex(idx)
	docs, err := idx.DocCount()
	return int(docs), err
}

// Queued is how many slugs wait for the next refresh batch: for tests that
// hold a build or batch and queue writes behind it.
func (p *Project) Queued() int {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	if p.collecting == nil {
		return 0
	}
	return len(p.collecting.slugs)
}

// Opening tells whether an open of the index for searches is under way: the
// registry's cap on open indexes counts it as open already, so that an
// index whose open finishes after a count is not missed by it.
func (p *Project) Opening() bool {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	return p.building != nil
}
