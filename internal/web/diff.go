package web

import (
	"html"
	"html/template"
	"strconv"
	"strings"
)

// The bounds of one diff page. Two 64 KiB versions of lines "a" and "b" in
// different orders have tens of thousands of changes: diffmatchpatch took
// 1.4–2 s on them (its only bound is a one-second timeout) and the page
// grew to 4–8 MB. Here the line diff is Myers' O(ND) algorithm on line
// numbers, bounded in edits and in steps; past a bound the page shows the
// changes up to the furthest point the search reached — the first changes
// of the diff — and says that it stops there.
const (
	// maxDiffEdits is the most changed lines (inserted plus deleted) the
	// search looks for. Its trace is kept for the way back: about
	// maxDiffEdits² / 2 int32s (2 MB).
	maxDiffEdits = 1000
	// maxDiffWork bounds the search's steps (diagonals tried plus equal
	// lines followed), some milliseconds.
	maxDiffWork = 8 << 20
	// maxDiffRows and maxDiffText bound what the page shows: rows of the
	// table, and bytes of line text in them (escaping at most sextuples it).
	maxDiffRows = 2000
	maxDiffText = 256 << 10
)

// diffLine is one line of a diff: Op is ' ', '+' or '-'; a Gap line stands
// for unchanged lines left out.
type diffLine struct {
	Op   string
	Text string
	Old  int // line number in the old text (0: none)
	New  int // line number in the new text (0: none)
	Gap  bool
}

// diffResult is a diff as the page shows it. Cut is set when it stops
// before the end of the texts; Changes counts the changed lines shown.
type diffResult struct {
	Lines   []diffLine
	Changes int
	Cut     bool
}

// diffTable is a diff as the page and the render cache hold it: the rows of
// its table as HTML — written here rather than by the page's template,
// which took some 70 ms for 3,000 rows even when the diff came from the
// cache — and the note's numbers.
type diffTable struct {
	HTML    template.HTML
	Changes int
	Cut     bool
	Same    bool // no line differs
}

// table renders d's rows, each line's text escaped.
func (d diffResult) table() diffTable {
	var b strings.Builder
	for _, l := range d.Lines {
		if l.Gap {
			b.WriteString(`<tr class="gap"><td></td><td></td><td>⋯</td></tr>` + "\n")
			continue
		}
		class := map[string]string{"+": "add", "-": "del", " ": "same"}[l.Op]
		b.WriteString(`<tr class="` + class + `"><td class="ln">` + lineNo(l.Old) + `</td><td class="ln">` + lineNo(l.New) +
			`</td><td class="code"><span class="op">` + l.Op + `</span>`)
		b.WriteString(html.EscapeString(strings.ReplaceAll(l.Text, "\x00", "\uFFFD")))
		b.WriteString("</td></tr>\n")
	}
	return diffTable{HTML: template.HTML(b.String()), Changes: d.Changes, Cut: d.Cut, Same: len(d.Lines) == 0}
}

// lineNo is a line number for the table; 0 is none.
func lineNo(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// diffContext is how many unchanged lines are shown around a change.
const diffContext = 3

// lineDiff compares two texts line by line and returns the changed lines
// with diffContext lines of context, within the bounds above.
func lineDiff(a, b string) []diffLine { return boundedDiff(a, b).Lines }

// boundedDiff is lineDiff with the note whether the diff was cut.
func boundedDiff(a, b string) diffResult {
	al, bl := splitLines(a), splitLines(b)
	ai, bi := internLines(al, bl)
	script, complete := editScript(ai, bi, maxDiffEdits, maxDiffWork)
	all := make([]diffLine, 0, len(script))
	for _, e := range script {
		switch e.op {
		case ' ':
			all = append(all, diffLine{Op: " ", Text: al[e.old], Old: e.old + 1, New: e.new + 1})
		case '-':
			all = append(all, diffLine{Op: "-", Text: al[e.old], Old: e.old + 1})
		case '+':
			all = append(all, diffLine{Op: "+", Text: bl[e.new], New: e.new + 1})
		}
	}
	res := diffResult{Cut: !complete}
	// Keep lines within diffContext of a change; fold the rest into gaps.
	keep := make([]bool, len(all))
	for i, l := range all {
		if l.Op == " " {
			continue
		}
		for j := max(0, i-diffContext); j <= min(len(all)-1, i+diffContext); j++ {
			keep[j] = true
		}
	}
	text := 0
	for i, l := range all {
		if !keep[i] {
			if len(res.Lines) == 0 || !res.Lines[len(res.Lines)-1].Gap {
				res.Lines = append(res.Lines, diffLine{Gap: true})
			}
			continue
		}
		if len(res.Lines) >= maxDiffRows || text+len(l.Text) > maxDiffText {
			res.Cut = true
			break
		}
		text += len(l.Text)
		if l.Op != " " {
			res.Changes++
		}
		res.Lines = append(res.Lines, l)
	}
	return res
}

// splitLines splits s into lines without their "\n"; "" has none.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// internLines numbers the distinct lines of a and b, so the diff compares
// ints.
func internLines(a, b []string) ([]int32, []int32) {
	ids := make(map[string]int32, len(a))
	conv := func(lines []string) []int32 {
		out := make([]int32, len(lines))
		for i, l := range lines {
			id, ok := ids[l]
			if !ok {
				id = int32(len(ids))
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	return conv(a), conv(b)
}

// edit is one step of an edit script: ' ' keeps a[old] (= b[new]), '-'
// deletes a[old], '+' inserts b[new].
type edit struct {
	op       byte
	old, new int
}

// editScript is the shortest edit script from a to b (Myers 1986), or, when
// that needs more than maxD edits or maxWork steps, the script up to the
// furthest point reached — a shortest script from a prefix of a to a prefix
// of b; complete says which. Common prefix and suffix cost no search.
func editScript(a, b []int32, maxD, maxWork int) (script []edit, complete bool) {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	for i := range pre {
		script = append(script, edit{' ', i, i})
	}
	mid, complete := myers(a[pre:len(a)-suf], b[pre:len(b)-suf], maxD, maxWork)
	for _, e := range mid {
		e.old += pre
		e.new += pre
		script = append(script, e)
	}
	if !complete {
		return script, false
	}
	for i := range suf {
		script = append(script, edit{' ', len(a) - suf + i, len(b) - suf + i})
	}
	return script, true
}

// myers runs the greedy forward search, keeping each round's furthest
// points (the trace) for the way back.
func myers(a, b []int32, maxD, maxWork int) ([]edit, bool) {
	n, m := len(a), len(b)
	off := maxD + 1
	v := make([]int32, 2*off+1)
	var trace [][]int32
	work := 0
	for d := 0; d <= maxD; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			switch {
			case d == 0:
				x = 0
			case k == -d || (k != d && v[off+k-1] < v[off+k+1]):
				x = int(v[off+k+1]) // down: insert b[y-1]
			default:
				x = int(v[off+k-1]) + 1 // right: delete a[x-1]
			}
			y := x - k
			for x < n && y < m && x >= 0 && y >= 0 && a[x] == b[y] {
				x, y = x+1, y+1
				work++
			}
			work++
			v[off+k] = int32(x)
			if x == n && y == m {
				trace = append(trace, append([]int32(nil), v[off-d:off+d+1]...))
				return backtrack(trace, x, y), true
			}
		}
		trace = append(trace, append([]int32(nil), v[off-d:off+d+1]...))
		if work > maxWork {
			break
		}
	}
	// Out of edits or steps: go back from the furthest valid point of the
	// last round (largest x+y inside both texts).
	d := len(trace) - 1
	last := trace[d]
	bx, by := 0, 0
	for k := -d; k <= d; k += 2 {
		x := int(last[k+d])
		y := x - k
		if x <= n && y >= 0 && y <= m && x+y > bx+by {
			bx, by = x, y
		}
	}
	return backtrack(trace, bx, by), false
}

// backtrack walks the trace back from (x, y), the furthest point of round
// len(trace)-1 on its diagonal, and returns the script in order. Each
// round's point came from the previous round's furthest point on a
// neighbouring diagonal, by one move and then a run of equal lines.
func backtrack(trace [][]int32, x, y int) []edit {
	var rev []edit
	for d := len(trace) - 1; d > 0; d-- {
		prev := trace[d-1] // diagonal k at index k+d-1
		at := func(k int) int { return int(prev[k+d-1]) }
		k := x - y
		down := k == -d || (k != d && at(k-1) < at(k+1))
		var px, py, sx int // the previous point and x after the move
		if down {
			px = at(k + 1)
			py, sx = px-(k+1), px
		} else {
			px = at(k - 1)
			py, sx = px-(k-1), px+1
		}
		for x > sx {
			x, y = x-1, y-1
			rev = append(rev, edit{' ', x, y})
		}
		if down {
			rev = append(rev, edit{'+', 0, py})
		} else {
			rev = append(rev, edit{'-', px, 0})
		}
		x, y = px, py
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		rev = append(rev, edit{' ', x, y})
	}
	out := make([]edit, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}
	return out
}
