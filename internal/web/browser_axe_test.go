package web

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// axeDefault is where .ci/run's `npm ci` in .ci/axe puts axe-core, seen
// from this package's directory (tests run there).
const axeDefault = "../../.ci/axe/node_modules/axe-core/axe.min.js"

// axeSource reads axe-core's script from MUNIN_AXE, or from axeDefault. A
// missing script skips the test, or fails it with MUNIN_REQUIRE_AXE=1 (as
// CI sets it, so that a failed install turns CI red instead of silently
// skipping the accessibility test).
func axeSource(t *testing.T) string {
	t.Helper()
	path := os.Getenv("MUNIN_AXE")
	if path == "" {
		path = axeDefault
	}
	src, err := os.ReadFile(path)
	if err != nil {
		msg := fmt.Sprintf("no axe-core at %s (run `npm ci` in .ci/axe, or set MUNIN_AXE): %v", path, err)
		if os.Getenv("MUNIN_REQUIRE_AXE") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return string(src)
}

// axeKnown lists violations that are known and left for their page's owner
// to fix, as "page rule" (page as in screenPage.name, rule as axe names it).
// The test logs them instead of failing; one that no longer occurs fails,
// so the list only shrinks. Empty it as the pages are fixed.
var axeKnown = map[string]bool{}

// axeViolation is one serious or critical finding of axe-core on a page.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// axeRun runs axe-core over the page, once it has been injected, and keeps
// the serious and critical violations with the first nodes of each.
const axeRun = `axe.run(document, {resultTypes: ['violations']}).then(r => r.violations
  .filter(v => v.impact === 'serious' || v.impact === 'critical')
  .map(v => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ' ' + (n.html || '').slice(0, 120))})))`

// TestBrowserAxeEveryPage runs axe-core over every page of the UI (the list
// of TestBrowserEveryPageFitsTheScreen) at 1280 and 390 px and fails on a
// serious or critical violation, naming the rule, the page and the
// elements (issue 26, point 5). The script is injected through the
// DevTools protocol's Runtime.evaluate: the pages' Content-Security-Policy
// allows no inline or foreign script, and does not apply to that.
func TestBrowserAxeEveryPage(t *testing.T) {
	sweepsOff(t)
	src := axeSource(t)
	ctx := newChrome(t)
	w := newScreenWorld(t)
	seen := map[string]bool{}
	for _, width := range []int64{1280, 390} {
		run(t, ctx, fmt.Sprintf("viewport %d", width), chromedp.EmulateViewport(width, screenHeight))
		w.visitScreens(t, ctx, w.screenPages(), func(p screenPage) {
			run(t, ctx, "inject axe-core into "+p.name, chromedp.Evaluate[chromedp.Void](src))
			found := value(t, ctx, "axe on "+p.name, chromedp.Evaluate[[]axeViolation](axeRun, chromedp.EvalAwaitPromise))
			for _, v := range found {
				key := p.name + " " + v.ID
				if axeKnown[key] {
					seen[key] = true
					t.Logf("known: page %s at %d px: %s (%s): %s", p.name, width, v.ID, v.Impact, strings.Join(v.Nodes, " | "))
					continue
				}
				t.Errorf("page %s at %d px: %s (%s, %s) on %s", p.name, width, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, " | "))
			}
		})
	}
	keys := make([]string, 0, len(axeKnown))
	for k := range axeKnown {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !seen[k] {
			t.Errorf("axeKnown lists %q, which no longer occurs: remove it", k)
		}
	}
}
