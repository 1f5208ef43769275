package web

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserEntryLoadsNothing: Chromium showing a memory full of images and
// other loading constructs sends no request beyond the page, its stylesheet,
// script and icon — in particular not the search the memory's image points
// at — and the search log records nothing in the viewer's name.
func TestBrowserEntryLoadsNothing(t *testing.T) {
	ctx := newChrome(t)
	u := newUI(t)
	u.remember(t, u.writerKey, "notes/img", fetchingContent)
	signInBrowser(t, ctx, u.srv.URL, u.admin)
	u.seen.take()
	page := projPath + "/e/notes/img"
	run(t, ctx, "open entry",
		chromedp.Navigate(u.srv.URL+page),
		chromedp.WaitVisible("#content"),
		chromedp.Poll[chromedp.Void](`document.readyState === 'complete'`))
	if n := count(t, ctx, "#content a[href='/w/ws/p/proj?q=secret+plan']"); n != 1 {
		t.Errorf("the image is not shown as a link (%d links to it)", n)
	}
	allowed := map[string]bool{"GET " + page: true, "GET /static/style.css": true, "GET /static/app.js": true,
		"GET /static/favicon.svg": true, "GET /favicon.ico": true}
	for _, r := range u.seen.take() {
		if !allowed[r] {
			t.Errorf("showing the entry made the browser send %s", r)
		}
	}
	rows, err := u.searchLog(u.adminKey)
	if err != nil || len(rows) != 0 {
		t.Errorf("search log after viewing the entry: %+v, %v; want empty", rows, err)
	}
}

// TestBrowserChecksSlugPattern: Chromium compiles the slug field's pattern
// (with the v flag HTML uses) and checks it: a bad slug is a pattern
// mismatch that keeps the form from submitting, a good one is valid.
func TestBrowserChecksSlugPattern(t *testing.T) {
	ctx := newChrome(t)
	u := newUI(t)
	signInBrowser(t, ctx, u.srv.URL, u.writer)
	run(t, ctx, "open new-entry form",
		chromedp.Navigate(u.srv.URL+projPath+"/new"),
		chromedp.WaitVisible("#edit-form"),
		chromedp.SetValue("#content", "text"))
	for _, tc := range []struct {
		slug  string
		valid bool
	}{
		{"decisions/db-choice", true},
		{"a", true},
		{"notes/2026.12_01-x", true},
		{"0/" + strings.Repeat("a", 126), true},
		{"Bad Slug", false},
		{"-leading-dash", false},
		{"/leading-slash", false},
		{"notes/UPPER", false},
		{"notes/with space", false},
		{"a" + strings.Repeat("b", 128), false},
	} {
		expr := `(() => { const s = document.querySelector('#slug'); s.value = ` + jsString(tc.slug) + `;
			return [s.validity.patternMismatch, s.checkValidity(), document.querySelector('#edit-form').checkValidity()]; })()`
		got := value(t, ctx, "check "+tc.slug, chromedp.Evaluate[[]bool](expr))
		if len(got) != 3 || got[0] == tc.valid || got[1] != tc.valid || got[2] != tc.valid {
			t.Errorf("slug %q: patternMismatch, field valid, form valid = %v; want valid %v", tc.slug, got, tc.valid)
		}
	}
}
