package web

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestEditScriptIsShortest: on random small texts the script turns a into
// b, keeps only equal lines, and has the fewest edits (n+m-2·LCS, by
// dynamic programming).
func TestEditScriptIsShortest(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 21))
	for i := range 2000 {
		a, b := randomLines(r), randomLines(r)
		script, complete := editScript(a, b, maxDiffEdits, maxDiffWork)
		if !complete {
			t.Fatalf("case %d: not complete", i)
		}
		edits := checkScript(t, a, b, script, true)
		if want := len(a) + len(b) - 2*lcs(a, b); edits != want {
			t.Fatalf("case %d: %d edits, want %d (a=%v b=%v)", i, edits, want, a, b)
		}
	}
}

// TestEditScriptCutIsAPrefix: out of edits, the script is a valid script
// from a prefix of a to a prefix of b with at most maxD edits.
func TestEditScriptCutIsAPrefix(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 21))
	for i := range 500 {
		a, b := randomLines(r), randomLines(r)
		maxD := r.IntN(6)
		script, complete := editScript(a, b, maxD, maxDiffWork)
		edits := checkScript(t, a, b, script, complete)
		if edits > maxD && !complete {
			t.Fatalf("case %d: %d edits past a bound of %d", i, edits, maxD)
		}
		if complete && edits != len(a)+len(b)-2*lcs(a, b) {
			t.Fatalf("case %d: complete but not shortest", i)
		}
	}
}

// checkScript checks that script walks a and b in order (to their ends when
// whole) and returns its edits.
func checkScript(t *testing.T, a, b []int32, script []edit, whole bool) int {
	t.Helper()
	x, y, edits := 0, 0, 0
	for _, e := range script {
		switch e.op {
		case ' ':
			if e.old != x || e.new != y || a[x] != b[y] {
				t.Fatalf("bad keep %+v at (%d,%d): a=%v b=%v script=%v", e, x, y, a, b, script)
			}
			x, y = x+1, y+1
		case '-':
			if e.old != x {
				t.Fatalf("bad delete %+v at (%d,%d): a=%v b=%v", e, x, y, a, b)
			}
			x, edits = x+1, edits+1
		case '+':
			if e.new != y {
				t.Fatalf("bad insert %+v at (%d,%d): a=%v b=%v", e, x, y, a, b)
			}
			y, edits = y+1, edits+1
		}
	}
	if whole && (x != len(a) || y != len(b)) {
		t.Fatalf("script ends at (%d,%d) of (%d,%d)", x, y, len(a), len(b))
	}
	return edits
}

func randomLines(r *rand.Rand) []int32 {
	out := make([]int32, r.IntN(12))
	for i := range out {
		out[i] = int32(r.IntN(3))
	}
	return out
}

func lcs(a, b []int32) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

// TestHostileDiffIsCut: two 64 KiB versions with tens of thousands of
// changes give a diff of at most maxDiffRows rows, marked as cut.
func TestHostileDiffIsCut(t *testing.T) {
	a, b := hostileDiff()
	d := boundedDiff(a, b)
	if !d.Cut || len(d.Lines) > maxDiffRows || d.Changes == 0 || d.Changes > maxDiffEdits {
		t.Fatalf("cut %v, %d rows, %d changes", d.Cut, len(d.Lines), d.Changes)
	}
	text := 0
	for _, l := range d.Lines {
		text += len(l.Text)
	}
	if text > maxDiffText {
		t.Fatalf("%d bytes of text", text)
	}
	// A small change to a big text is not cut.
	big := strings.Repeat("line\n", 10000)
	if d := boundedDiff(big, big+"more\n"); d.Cut || d.Changes != 1 {
		t.Fatalf("one added line: cut %v, %d changes", d.Cut, d.Changes)
	}
}

// TestDiffTableEscapes: a line's text is text in the table, never markup.
func TestDiffTableEscapes(t *testing.T) {
	tab := boundedDiff("a\n", "<script>alert(\"x\")</script>&\x00\n").table()
	out := string(tab.HTML)
	if strings.Contains(out, "<script") || !strings.Contains(out, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&amp;\uFFFD") ||
		!strings.Contains(out, `<tr class="add"><td class="ln"></td><td class="ln">1</td>`) || tab.Changes != 2 {
		t.Fatalf("table:\n%s", out)
	}
}
