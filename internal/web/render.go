package web

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"munin/internal/api"
	"munin/internal/memory"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pages holds one parsed template set per page: the shared layout plus the
// page's own blocks, so pages can define "content" independently; and the
// cache of rendered entries and diffs the pages show.
type pages struct {
	byName map[string]*template.Template
	cache  *renderCache
}

// funcs are the helpers templates may call.
var funcs = template.FuncMap{
	"when":      formatTime,
	"ago":       timeElement,
	"projURL":   projectURL,
	"entryURL":  entryURL,
	"reviewURL": reviewURL,
	"highlight": highlight,
	"add":       func(a, b int) int { return a + b },
	"plural":    plural,
	"query":     queryString,
	"roles":     func() []string { return []string{"read", "propose", "write", "admin"} },
	"deref":     func(t *time.Time) time.Time { return *t },
}

func loadPages() (*pages, error) {
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("parse layout: %w", err)
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	p := &pages{byName: map[string]*template.Template{}, cache: newRenderCache(renderCacheBytes)}
	for _, n := range names {
		base := path.Base(n)
		if base == "layout.html" {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(templateFS, n)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", base, err)
		}
		p.byName[strings.TrimSuffix(base, ".html")] = t
	}
	return p, nil
}

// view is what every page template gets: the common frame and the page's data.
type view struct {
	Title string
	// Key is the signed-in key in view: on a project's pages the session's
	// key for that project (its role decides the tabs and buttons), else the
	// session's first key; nil on the sign-in page.
	Key     *memory.Key
	CSRF    string             // the session's form token
	Project *memory.ProjectRef // the project in view, for the navigation
	// CanWrite, IsAdmin and ServerAdmin decide which forms and tabs are
	// shown at all; the service checks again, since hiding a form protects
	// nothing. IsAdmin: the key in view administers (its project, or the
	// server); AdminsKeys: some key of the session administers, so the keys
	// page lists something; ServerAdmin: the session is a server-admin key,
	// which administers the server and reads no memory.
	CanWrite    bool
	IsAdmin     bool
	AdminsKeys  bool
	ServerAdmin bool
	// KeyCount is how many keys (projects) the session holds.
	KeyCount int
	// Reviews: the key in view approves and rejects proposals (an admin of
	// the project in view); Pending then counts the project's pending
	// proposals, for the header. Proposes: the key's writes may wait for
	// review, so it has a page of its own proposals.
	Reviews  bool
	Pending  int
	Proposes bool
	Flash    string
	Error    string
	Data     any
}

// pageBuffers are the buffers pages are executed into, used again: a page
// of 250 KB grew a new buffer through 1 MB of allocations each time
// (BenchmarkHostileDiff/cached).
var pageBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledPage is the largest buffer kept for the next page: the rare
// larger one goes to the collector rather than staying in the pool.
const maxPooledPage = 1 << 20

func putPageBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledPage {
		b.Reset()
		pageBuffers.Put(b)
	}
}

// render executes a page into a buffer first, so a template failure is a
// clean 500 instead of half a page.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, rq *request, status int, name string, v view) {
	if rq != nil {
		if v.Key == nil {
			v.Key = &rq.key
		}
		v.CSRF = rq.sess.csrf
		v.IsAdmin = v.Key.Role.Administers()
		v.ServerAdmin = rq.caller.ServerAdmin()
		v.KeyCount = len(rq.caller.Keys())
		for _, k := range rq.caller.Keys() {
			v.AdminsKeys = v.AdminsKeys || k.Role.Administers()
		}
		if v.Flash == "" {
			v.Flash = h.sessions.popFlash(rq.sess.id)
		}
		if v.Project != nil {
			h.reviewHeader(r, rq, &v)
		}
	}
	t := h.pages.byName[name]
	buf := pageBuffers.Get().(*bytes.Buffer)
	defer putPageBuffer(buf)
	if t == nil {
		h.log.Error("web: no template", "name", name)
		status, name = http.StatusInternalServerError, "error"
		t = h.pages.byName[name]
		v.Error = "internal error"
	}
	if err := t.ExecuteTemplate(buf, "layout", v); err != nil {
		h.log.Error("web: render page", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	// Memory is private to a project: no proxy or browser cache may keep it.
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// renderError shows err on a page with the status of its code (the same
// mapping as the REST API); internal details are logged, never shown.
func (h *Handler) renderError(w http.ResponseWriter, r *http.Request, rq *request, err error) {
	code := memory.ErrorCode(err)
	var me *memory.Error
	if !errors.As(err, &me) {
		h.log.Error("web: unexpected error", "path", memory.RedactKeys(r.URL.Path), "err", err)
	}
	setRetryAfter(w, err)
	h.renderErrorStatus(w, r, rq, api.StatusOf(code), message(err))
}

// setRetryAfter sends the Retry-After of a refusal over a limit (a 429),
// in whole seconds, as the REST API does.
func setRetryAfter(w http.ResponseWriter, err error) {
	var me *memory.Error
	if errors.As(err, &me) && me.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(me.RetryAfter.Seconds()))))
	}
}

// renderErrorStatus shows msg on an error page with an explicit status.
func (h *Handler) renderErrorStatus(w http.ResponseWriter, r *http.Request, rq *request, status int, msg string) {
	if status == http.StatusUnauthorized {
		h.render(w, r, nil, status, "login", view{Title: "Sign in", Error: msg})
		return
	}
	h.render(w, r, rq, status, "error", view{Title: http.StatusText(status), Error: msg})
}

// message is what a person may read of err: the message without the code
// prefix; "internal error" for anything unexpected.
func message(err error) string {
	var me *memory.Error
	if !errors.As(err, &me) || me.Code == memory.CodeInternal {
		return "internal error; the details are in the server log"
	}
	if me.Message == "" {
		return string(me.Code)
	}
	return me.Message
}

// serveStatic serves the embedded stylesheet, script and icons.
func serveStatic(w http.ResponseWriter, r *http.Request) {
	serveFile(w, r, path.Base(r.URL.Path))
}

// serveFavicon answers /favicon.ico, which browsers and other clients ask
// for without reading a page's <link rel="icon">. static/favicon.ico is
// static/favicon.svg drawn at 32×32, a PNG in an ICO container.
func serveFavicon(w http.ResponseWriter, r *http.Request) { serveFile(w, r, "favicon.ico") }

// iconCache is how long an icon may be cached: icons do not change between
// releases the way the stylesheet and script may, and a browser asks for
// /favicon.ico on every page it has none for.
const iconCache = "public, max-age=604800"

func serveFile(w http.ResponseWriter, r *http.Request, name string) {
	b, err := staticFS.ReadFile("static/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	cache := "public, max-age=3600"
	switch path.Ext(name) {
	case ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case ".svg":
		w.Header().Set("Content-Type", "image/svg+xml")
		cache = iconCache
	case ".ico":
		w.Header().Set("Content-Type", "image/x-icon")
		cache = iconCache
	}
	w.Header().Set("Cache-Control", cache)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
}

// formatTime renders a time in UTC to the minute; the zero time is "never".
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// timeElement shows t as a <time> element: the exact time to the second,
// which app.js turns into a relative one ("5 min ago") with the exact time
// on hover. The browser's clock decides "ago", so a page left open stays
// right and the server renders no clock-dependent text; without script the
// exact time stays. Use it where a time is text, formatTime in attributes.
func timeElement(t time.Time) template.HTML {
	if t.IsZero() {
		return "never"
	}
	exact := formatTime(t)
	return template.HTML(`<time class="ago" datetime="` + t.UTC().Format(time.RFC3339) + `" title="` + exact + `">` + exact + `</time>`)
}

// plural is the noun for a count of n: one for exactly 1, many otherwise
// ("1 hit", "0 hits", "2 hits").
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// projectURL is the page of a project.
func projectURL(ref memory.ProjectRef) string {
	return "/w/" + ref.Workspace + "/p/" + ref.Project
}

// entryURL is the page of an entry; slugs are [a-z0-9._/-] and need no escaping.
func entryURL(ref memory.ProjectRef, slug string) string {
	return projectURL(ref) + "/e/" + slug
}

// reviewURL is the review queue of a project.
func reviewURL(ref memory.ProjectRef) string { return projectURL(ref) + "/review" }

// queryString builds "?k=v&…" from pairs, leaving out empty values.
func queryString(pairs ...any) string {
	q := url.Values{}
	for i := 0; i+1 < len(pairs); i += 2 {
		v := fmt.Sprint(pairs[i+1])
		if v != "" && v != "0" {
			q.Set(fmt.Sprint(pairs[i]), v)
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// statusOf is the HTTP status of err's code (api.StatusOf, the one mapping).
func statusOf(err error) int { return api.StatusOf(memory.ErrorCode(err)) }
