//go:build hostile

// The attacker as a process of its own: TestHostile re-executes its test
// binary with -test.run=^TestHostileAttacker$ and the attack spec in the
// environment, so the attack clients do not share the victim's process and
// its scheduler. The child runs the attacks until its stdin closes (or its
// own deadline passes) and writes the answers it got as JSON on stdout.

package hostile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// specEnv carries the attack spec (JSON) to the child process.
const specEnv = "FEIND_AUFTRAG"

// Lines the child writes on stdout for its parent.
const (
	readyLine    = "FEIND-BEREIT"
	resultPrefix = "FEIND-ERGEBNIS "
)

// attackSpec is what the child needs to attack.
type attackSpec struct {
	Base      string
	ReadKey   string
	WriteKey  string
	ReadKeys  []string // all read keys of the attacker's project, ReadKey among them
	Pages     []string // the heavy pages (attack 15)
	ProtoVers string
	Nrs       []int
	Parallel  int
	// Limit bounds the child's run should its parent never close stdin.
	Limit time.Duration
}

// tallyJSON is a tally as the child reports it.
type tallyJSON struct {
	Name     string
	Codes    map[int]int
	Cut      int
	Failed   int
	FirstErr string
}

// attackerMain is TestHostileAttacker in the attacker process: it runs the
// attacks of FEIND_AUFTRAG and prints their tallies.
func attackerMain(t *testing.T, raw string) {
	var spec attackSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatalf("%s: %v", specEnv, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), spec.Limit)
	defer cancel()
	// The parent closes stdin to end the attack (or dies, which closes it too).
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }()

	a := &attacker{base: spec.Base, readKey: spec.ReadKey, writeKey: spec.WriteKey, readKeys: spec.ReadKeys,
		common: commonWords(), protoVers: spec.ProtoVers, pages: spec.Pages, web: &webSession{}}
	var wg sync.WaitGroup
	var tallies []*tally
	for _, nr := range spec.Nrs {
		atk := attackByNr(nr)
		tl := newTally(atk.label())
		tallies = append(tallies, tl)
		n := atk.workers(spec.Parallel)
		hc := clientFor(tl, n, false)
		defer hc.CloseIdleConnections()
		// A browser's cookies (attack 15's web session; nothing else sets
		// any), and redirects returned rather than followed: a page that
		// sends the attacker to the sign-in page means its session ended.
		hc.Jar, _ = cookiejar.New(nil)
		hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		for w := range n {
			wg.Go(func() { atk.run(ctx, a, hc, w, rand.New(rand.NewPCG(uint64(nr), uint64(w)))) })
		}
	}
	fmt.Println(readyLine)
	<-ctx.Done()
	wg.Wait()

	out := make([]tallyJSON, 0, len(tallies))
	for _, tl := range tallies {
		codes, cut, failed, first := tl.counts()
		out = append(out, tallyJSON{Name: tl.name, Codes: codes, Cut: cut, Failed: failed, FirstErr: first})
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(resultPrefix + string(b))
}

// attackProc is a running attacker process.
type attackProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	ready  chan struct{} // closed when the child's workers run
	done   chan struct{} // closed when its stdout ended
	stderr bytes.Buffer

	mu     sync.Mutex
	result []tallyJSON
	gotRes bool
	tail   []string // its last other stdout lines, for a failure
}

// startAttacker starts the attacker process for spec and waits until its
// workers run. The process runs with GOMAXPROCS=1: on the test's two cores
// it takes at most one, the other being the server's (see doc.go). ctx
// ending kills it; so does the test's cleanup.
func startAttacker(t *testing.T, ctx context.Context, spec attackSpec) (*attackProc, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHostileAttacker$", "-test.count=1",
		fmt.Sprintf("-test.timeout=%s", spec.Limit+time.Minute))
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOMAXPROCS=") && !strings.HasPrefix(kv, specEnv+"=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "GOMAXPROCS=1", specEnv+"="+string(b))
	cmd.WaitDelay = 5 * time.Second
	p := &attackProc{cmd: cmd, ready: make(chan struct{}), done: make(chan struct{})}
	cmd.Stderr = &p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = p.stdin.Close(); _ = cmd.Process.Kill(); <-p.done })
	go p.read(stdout)
	select {
	case <-p.ready:
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("Angreiferprozess endete vor dem Angriff: %s", p.why())
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill() // it must not attack the phases after this one
		<-p.done
		return nil, fmt.Errorf("Angreiferprozess nicht binnen 30 s bereit: %s", p.why())
	}
}

// read follows the child's stdout until it ends, then waits for the child.
func (p *attackProc) read(stdout io.Reader) {
	defer close(p.done)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	readyOnce := sync.OnceFunc(func() { close(p.ready) })
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == readyLine:
			readyOnce()
		case strings.HasPrefix(line, resultPrefix):
			var res []tallyJSON
			err := json.Unmarshal([]byte(strings.TrimPrefix(line, resultPrefix)), &res)
			p.mu.Lock()
			if err == nil {
				p.result, p.gotRes = res, true
			} else {
				p.tail = append(p.tail, "Ergebnis unlesbar: "+err.Error())
			}
			p.mu.Unlock()
		default:
			p.mu.Lock()
			p.tail = append(p.tail[max(0, len(p.tail)-9):], line)
			p.mu.Unlock()
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	_ = p.cmd.Wait()
}

// why describes a child that ended without its result.
func (p *attackProc) why() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("%v; stdout: %s; stderr: %s", p.cmd.ProcessState, strings.Join(p.tail, " | "), strings.TrimSpace(p.stderr.String()))
}

// cpu is the CPU time the ended child used (user and system).
func (p *attackProc) cpu() time.Duration {
	if st := p.cmd.ProcessState; st != nil {
		return st.UserTime() + st.SystemTime()
	}
	return 0
}

// finish ends the attack (stdin closed) and returns the child's tallies;
// past 30 s the child is killed and the error says so.
func (p *attackProc) finish() ([]*tally, error) {
	_ = p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return nil, errors.New("Angreiferprozess nicht binnen 30 s beendet; getötet")
	}
	p.mu.Lock()
	res, ok := p.result, p.gotRes
	p.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("Angreiferprozess ohne Ergebnis: %s", p.why())
	}
	if !p.cmd.ProcessState.Success() { // a race report, say, after the result
		return nil, fmt.Errorf("Angreiferprozess gescheitert: %s", p.why())
	}
	var out []*tally
	for _, r := range res {
		tl := newTally(r.Name)
		tl.codes, tl.cut, tl.failed, tl.firstErr = r.Codes, r.Cut, r.Failed, r.FirstErr
		if tl.codes == nil {
			tl.codes = map[int]int{}
		}
		out = append(out, tl)
	}
	return out, nil
}
