package index

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"

	"munin/internal/memory"
)

// Each project's index lives on disk (scorch) under the registry's directory, so a
// restart opens it instead of rebuilding it. It is derived data: the
// database is the truth, and the index records beside its documents, in the
// same scorch snapshot, the change of the database it reflects (a
// memory.Mark) and the format (mapping and analysis) it was built with.
// Opening it catches up with the changes after that mark; an index that is
// missing, unreadable, of another format, half-built or of another history
// (the database does not hold its mark: a restored backup) is rebuilt from
// the database, never trusted.

// Root is the directory of every project's index in a data directory.
func Root(dataDir string) string { return filepath.Join(dataDir, "index") }

// Dir is the directory of ref's index under root.
func Dir(root string, ref memory.ProjectRef) string {
	return filepath.Join(root, ref.Workspace, ref.Project)
}

// Internal keys of the index: the format it was built with and the mark of
// the change it reflects. Exported for the tests that spoil an index on disk.
var (
	FormatKey = []byte("munin.format")
	MarkKey   = []byte("munin.mark")
)

// encodeMark and decodeMark store a mark as 16 bytes.
func encodeMark(m memory.Mark) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(m.Seq)), uint64(m.Stamp))
}

func decodeMark(b []byte) (memory.Mark, bool) {
	if len(b) != 16 {
		return memory.Mark{}, false
	}
	return memory.Mark{Seq: int64(binary.BigEndian.Uint64(b)), Stamp: int64(binary.BigEndian.Uint64(b[8:]))}, true
}

// asyncErrorCallback is the name of the scorch callback that tells a project
// its index cannot be written (persisterFailed).
const asyncErrorCallback = "munin"

// Scorch's background persister and merger report their failures (a full
// disk, a directory made read-only) to a callback registered by name; it
// finds the index by its path.
var (
	brokenMu sync.Mutex
	byPath   = map[string]*Project{}
)

func init() {
	scorch.RegistryAsyncErrorCallbacks[asyncErrorCallback] = func(err error, path string) {
		brokenMu.Lock()
		p := byPath[filepath.Dir(path)] // scorch keeps its files in <index>/store
		brokenMu.Unlock()
		if p != nil {
			p.persisterFailed(err)
		}
	}
}

// DefaultPersistNap is the default of Config.PersistNap: how long scorch's
// persister waits before it writes what the index holds in memory, so that
// the small segments of many refresh batches become one file instead of one
// each, merged again and again. In the load test's mix (32 agents, 30 %
// writes) without the nap writing and merging those segments took 14 % of
// the CPU, and recall p50 was 42 instead of 23.5 ms (2026-12-01,
// AUSBAUSTUFEN.md Stufe 7). Nothing is at risk meanwhile: the index catches
// up from the database after a crash.
const DefaultPersistNap = time.Second

// scorchConfig is the configuration of every index. unsafe_batch: a batch
// returns once searches see it, without waiting until it is on disk; after a
// crash the index catches up from the database instead.
// An index whose nap is shorter than the persist pace (tests that want
// their index on disk soon) is not paced (write_pace.go).
func scorchConfig(nap time.Duration) map[string]any {
	cfg := map[string]any{
		"unsafe_batch":           true,
		"asyncErrorCallbackName": asyncErrorCallback,
		"scorchPersisterOptions": map[string]any{"PersisterNapTimeMSec": nap.Milliseconds()},
	}
	if nap >= persistPace {
		cfg["eventCallbackName"] = persistPaceCallback
	}
	return cfg
}

// openOrBuild returns the project's index, caught up with the Source: the
// one on disk if it can be trusted, else a new one built from the Source.
// p.mu is held.
func (p *Project) openOrBuild() (bleve.Index, error) {
	idx, why := p.openExisting()
	if idx != nil {
		err := p.applyLocked(idx)
		if err == nil {
			p.cfg.Counters.Opened.Add(1)
			return idx, nil
		}
		idx.Close()
		if !errors.Is(err, memory.ErrUnknownMark) {
			return nil, err // the database failed: try again later
		}
		why = err.Error()
	}
	if why != "" {
		p.cfg.Logger.Warn("search: rebuilding index", "project", p.ref.String(), "reason", why)
	}
	return p.build()
}

// openExisting opens the index on disk and reads its mark into p.mark.
// It returns nil and why not if there is none or it cannot be trusted ("" if
// there simply is none yet).
func (p *Project) openExisting() (bleve.Index, string) {
	if _, err := os.Stat(p.path); errors.Is(err, os.ErrNotExist) {
		return nil, ""
	}
	if err := verifySegments(p.path); err != nil {
		return nil, err.Error()
	}
	idx, err := bleve.OpenUsing(p.path, scorchConfig(p.cfg.PersistNap))
	if err != nil {
		return nil, fmt.Sprintf("open: %v", err)
	}
	format, err := idx.GetInternal(FormatKey)
	if err == nil && string(format) != strconv.Itoa(indexFormat) {
		err = fmt.Errorf("built with format %q, this server uses %d", format, indexFormat)
	}
	var mark memory.Mark
	if err == nil {
		var raw []byte
		if raw, err = idx.GetInternal(MarkKey); err == nil {
			var ok bool
			if mark, ok = decodeMark(raw); !ok {
				err = errors.New("no change mark recorded (build cut short)")
			}
		}
	}
	if err == nil {
		err = adoptMapping(idx, p.cfg.Mapping)
	}
	if err != nil {
		idx.Close()
		return nil, err.Error()
	}
	p.mark = mark
	p.versions = make(map[string]int)
	return idx, ""
}

// build makes a fresh index holding the latest live version of every entry,
// replacing whatever is on disk. p.mu is held, so refreshes arriving meanwhile
// wait and are applied after it (invariant 4,
// docs/architecture.md#invariant-4-projects-do-not-block-each-other); they catch
// up from the mark the build's snapshot reflects, so nothing they wrote is lost.
func (p *Project) build() (bleve.Index, error) {
	if err := os.RemoveAll(p.path); err != nil {
		return nil, fmt.Errorf("remove old index of %s: %w", p.ref, err)
	}
	if err := os.MkdirAll(filepath.Dir(p.path), 0o700); err != nil {
		return nil, fmt.Errorf("index of %s: %w", p.ref, err)
	}
	idx, err := bleve.NewUsing(p.path, p.cfg.Mapping, scorch.Name, scorch.Name, buildConfig(p.cfg.PersistNap))
	if err != nil {
		return nil, fmt.Errorf("new index for %s: %w", p.ref, err)
	}
	versions := make(map[string]int) // stays empty offline (build_offline.go)
	record := !offline.Load()
	b := newSizedBatch(idx, p.cfg.BatchBytes, p.cfg.BuildBatch)
	if n := buildBatchesAtOnce.Load(); n > 0 {
		b.applyAsync(int(n))
	}
	var indexErr error
	mark, err := p.cfg.Source.ScanLatestSeq(p.cfg.Base, p.ref, func(v memory.Version) error {
		if v.Deleted {
			return nil // ScanLatestSeq promises live versions; be safe anyway
		}
		if record {
			versions[v.Slug] = v.Version
		}
		indexErr = b.index(v)
		return indexErr
	})
	if err != nil && indexErr == nil {
		err = sourceError{err}
	}
	if werr := b.wait(); err == nil {
		err = werr
	}
	if err == nil {
		b.b.SetInternal(FormatKey, []byte(strconv.Itoa(indexFormat)))
		storeStubMapping(b.b)
		b.setMark(mark)
		err = b.flush()
	}
	if err == nil && b.flushes > 1 {
		err = mergeBuilt(p.cfg.Base, idx)
	}
	if err != nil {
		idx.Close()
		os.RemoveAll(p.path)
		return nil, fmt.Errorf("build index of %s: %w", p.ref, err)
	}
	p.cfg.Counters.Builds.Add(1)
	p.mark, p.versions = mark, versions
	return idx, nil
}

// persisterFailed is told by scorch that the index cannot be written. Its
// persister retries at once and for ever, so the index is dropped (in its own
// goroutine: scorch waits for the caller when it closes) and the project's
// searches answer unavailable until Config.IndexRetry has passed; then the
// next use opens the index again from disk and catches up.
func (p *Project) persisterFailed(err error) {
	idx := p.Current()
	if idx == nil || p.broken.Swap(&idx) != nil {
		return // already dropped or being dropped
	}
	go func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		defer p.broken.Store(nil)
		if p.Current() != idx {
			return
		}
		p.cfg.Logger.Error("search: index cannot be written; dropped", "project", p.ref.String(), "retry_in", p.cfg.IndexRetry.String(), "err", err)
		p.dropLocked() // searches meanwhile wait for p.mu, then see the failure
		p.qmu.Lock()
		p.failed = &failure{err: fmt.Errorf("write index: %w", err), retryAt: time.Now().Add(p.cfg.IndexRetry)}
		p.qmu.Unlock()
	}()
}

// mergeBuilt merges a built index's segments into one (offline: into a few,
// mergeInSteps). A build leaves one segment per batch, which scorch's
// merger folds only into tiers of about ten; one segment made a recall over
// 10,000 entries about 15 % cheaper (BenchmarkRecall10k/corpus, 2026-12-01)
// for about 5 % more build time.
func mergeBuilt(ctx context.Context, idx bleve.Index) error {
	adv, err := idx.Advanced()
	if err != nil {
		return err
	}
	s, ok := adv.(*scorch.Scorch)
	if !ok {
		return nil
	}
	// The merger merges files: wait until the persister wrote them.
	WaitPersisted(idx)
	if offline.Load() {
		return mergeInSteps(ctx, idx, s)
	}
	return s.ForceMerge(ctx, nil)
}

// persistWait bounds how long closing an index waits for scorch to write
// what it holds only in memory (unsafe_batch): a close that gives up loses
// nothing, the next open catches up from the database.
const persistWait = 5 * time.Second

// WaitPersisted waits until everything idx shows is on disk, or a few
// seconds have passed (scorch writes in the background: unsafe_batch).
func WaitPersisted(idx bleve.Index) {
	adv, err := idx.Advanced()
	if err != nil {
		return
	}
	s, ok := adv.(*scorch.Scorch)
	if !ok {
		return
	}
	deadline := time.Now().Add(persistWait)
	for time.Now().Before(deadline) {
		m := s.StatsMap()
		if m["LastPersistedEpoch"].(uint64) >= m["CurRootEpoch"].(uint64) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// watch routes the asynchronous errors of p's index to p; unwatch stops it.
func watch(p *Project) {
	brokenMu.Lock()
	byPath[p.path] = p
	brokenMu.Unlock()
}

func unwatch(p *Project) {
	brokenMu.Lock()
	if byPath[p.path] == p {
		delete(byPath, p.path)
	}
	brokenMu.Unlock()
}

// verifySegments checks every segment file of the index at dir against the
// CRC-32 in its footer (zap writes one over everything before it). Scorch
// itself does not: a segment with flipped bytes would be opened and searched.
// Reading the files costs about what the first searches read anyway.
func verifySegments(dir string) error {
	names, err := filepath.Glob(filepath.Join(dir, "store", "*.zap"))
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := verifySegment(name); err != nil {
			return fmt.Errorf("segment %s: %w", filepath.Base(name), err)
		}
	}
	return nil
}

func verifySegment(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() < 4 {
		return errors.New("truncated")
	}
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, io.LimitReader(f, st.Size()-4)); err != nil {
		return err
	}
	var want [4]byte
	if _, err := io.ReadFull(f, want[:]); err != nil {
		return err
	}
	if h.Sum32() != binary.BigEndian.Uint32(want[:]) {
		return errors.New("checksum mismatch (corrupted)")
	}
	return nil
}
