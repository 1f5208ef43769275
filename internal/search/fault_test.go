package search

import (
	"errors"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"munin/internal/memory"
	"munin/internal/search/index"
	"munin/internal/search/searchtest"
)

// Faults of the disk under a running index: the server keeps serving, a
// recall of the hit project answers unavailable with the cause rather than
// a stale hit, and the index recovers once the fault is gone.

// faultRegistry is a registry on dir that retries an unusable index after
// retry.
func faultRegistry(t *testing.T, src Source, dir string, retry time.Duration) *Registry {
	r := NewRegistry(src, Options{Dir: dir, IndexRetry: retry, PersistNap: time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { r.Close() })
	return r
}

// searchOrUnavailable searches text: hits, or nil and true if the project
// answered unavailable. Any other error fails the test.
func searchOrUnavailable(t *testing.T, r *Registry, ref memory.ProjectRef, text string) ([]memory.Hit, string) {
	t.Helper()
	hits, err := r.Search(testCtx(t), ref, memory.SearchQuery{Text: text})
	if memory.ErrorCode(err) == memory.CodeUnavailable {
		return nil, err.Error()
	}
	if err != nil {
		t.Fatalf("search %q: %v", text, err)
	}
	return hits, ""
}

// TestDiskFullWhileIndexing: the file size limit (RLIMIT_FSIZE) stands in
// for a full disk: scorch cannot write the segment of a large entry. The
// recall that waited for it finds it (the index shows it from memory); once
// the persister fails, the project answers unavailable naming the write
// error; every answer that is not unavailable holds the entry; after the
// limit is lifted the index is opened again and caught up.
func TestDiskFullWhileIndexing(t *testing.T) {
	if raceEnabled {
		t.Skip("a search of the 1 MiB entry outlasts the retry window under the race detector")
	}
	// The limit holds for the whole process: go test's own log of the
	// files a test opened failed to grow past it ("testlog.txt: file too
	// large"), and so did the package.
	if os.Getenv("MUNIN_TEST_ALONE") == "" {
		runAlone(t, "TestDiskFullWhileIndexing")
		return
	}
	dir := t.TempDir()
	src := newFakeSource()
	fillWords(src, projA, 20)
	// Long enough for a search to see the answer between the retries
	// (each reopens the index and catches up the large entry again).
	r := faultRegistry(t, src, dir, 500*time.Millisecond)
	want(t, r, projA, word(1), "e001")
	p, _ := r.project(projA)
	index.WaitPersisted(p.Current())

	var old syscall.Rlimit
	must(t, syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old))
	limit := old
	limit.Cur = 256 << 10 // above root.bolt (128 KiB), below the new segment
	must(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit))
	lifted := false
	lift := func() {
		if !lifted {
			lifted = true
			must(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old))
		}
	}
	t.Cleanup(lift)

	src.Put(projA, "big", "Big", "bigword "+searchtest.RandomWords(rand.New(rand.NewPCG(7, 8)), 1<<20))
	refresh(t, r, projA, "big")
	var cause string
	eventually(t, "recall answers unavailable", func() bool {
		hits, why := searchOrUnavailable(t, r, projA, "bigword")
		if why == "" && len(hits) != 1 {
			t.Fatalf("bigword while the disk is full: %v", slugs(hits))
		}
		cause = why
		return why != ""
	})
	if !strings.Contains(cause, "ws/alpha") || !strings.Contains(cause, "write index") {
		t.Fatalf("unavailable answer %q: want the project and the write failure", cause)
	}
	if _, why := searchOrUnavailable(t, r, projB, "anything"); why != "" {
		t.Fatalf("another project answers %q", why)
	}

	lift()
	eventually(t, "index usable again", func() bool {
		hits, why := searchOrUnavailable(t, r, projA, "bigword")
		return why == "" && len(hits) == 1
	})
	want(t, r, projA, word(2), "e002")
}

// TestReadOnlyIndexDirectory: an index directory the server may not write
// makes its project answer unavailable with the cause, never stale hits,
// and the project recovers once the directory is writable again. Root
// writes anyway, so as root the test runs itself as nobody.
func TestReadOnlyIndexDirectory(t *testing.T) {
	if os.Geteuid() == 0 && os.Getenv("MUNIN_TEST_AS_NOBODY") == "" {
		runAsNobody(t, "TestReadOnlyIndexDirectory")
		return
	}
	dir := t.TempDir()
	src := newFakeSource()
	fillWords(src, projA, 20)
	r := faultRegistry(t, src, dir, 20*time.Millisecond)
	want(t, r, projA, word(1), "e001")
	must(t, r.Close())

	idx := IndexDir(dir, projA)
	must(t, chmodTree(idx, 0o500, 0o400))
	t.Cleanup(func() { chmodTree(idx, 0o700, 0o600) })
	src.Put(projA, "e001", "Entry", "changedword")
	r = faultRegistry(t, src, dir, 20*time.Millisecond)
	hits, why := searchOrUnavailable(t, r, projA, "changedword")
	if why == "" {
		t.Fatalf("read-only index answered %v, want unavailable", slugs(hits))
	}
	if !strings.Contains(why, "ws/alpha") || !strings.Contains(why, "permission denied") {
		t.Fatalf("unavailable answer %q: want the project and the cause", why)
	}

	must(t, chmodTree(idx, 0o700, 0o600))
	eventually(t, "index usable again", func() bool {
		hits, why := searchOrUnavailable(t, r, projA, "changedword")
		return why == "" && len(hits) == 1
	})
	want(t, r, projA, word(1))
}

// chmodTree sets the mode of every directory and file under root.
func chmodTree(root string, dirMode, fileMode fs.FileMode) error {
	var paths []string
	var modes []fs.FileMode
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		paths = append(paths, path)
		modes = append(modes, map[bool]fs.FileMode{true: dirMode, false: fileMode}[d.IsDir()])
		return nil
	})
	// Directories last when closing them, first when opening: walk order
	// lists a directory before its contents.
	if dirMode&0o200 == 0 {
		for i := len(paths) - 1; i >= 0; i-- {
			err = errors.Join(err, os.Chmod(paths[i], modes[i]))
		}
		return err
	}
	for i := range paths {
		err = errors.Join(err, os.Chmod(paths[i], modes[i]))
	}
	return err
}

// runAsNobody runs test in a copy of the test binary as user nobody, in a
// temporary directory it may write.
func runAsNobody(t *testing.T, test string) {
	tmp, err := os.MkdirTemp("", "munin-nobody-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(tmp) })
	must(t, os.Chmod(tmp, 0o777))
	bin := filepath.Join(tmp, "search.test")
	self, err := os.ReadFile(os.Args[0])
	must(t, err)
	must(t, os.WriteFile(bin, self, 0o755))
	cmd := testProcess(bin, test, "MUNIN_TEST_AS_NOBODY=1", "TMPDIR="+tmp, "HOME="+tmp)
	cmd.Dir = tmp
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	mustPass(t, cmd, test+" as nobody")
}

// runAlone runs test again in a process of its own (this test binary),
// for a test that changes what holds for the whole process.
func runAlone(t *testing.T, test string) {
	mustPass(t, testProcess(os.Args[0], test, "MUNIN_TEST_ALONE=1"), test+" alone")
}

// testProcess is the command that runs test binary bin's test once, with
// env added to this process's environment.
func testProcess(bin, test string, env ...string) *exec.Cmd {
	cmd := exec.Command(bin, "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// mustPass runs cmd and fails t unless it passed.
func mustPass(t *testing.T, cmd *exec.Cmd, what string) {
	t.Helper()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("%s: %v\n%s", what, err, out)
	}
}
