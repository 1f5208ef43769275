package web

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"munin/internal/memory"
	"munin/internal/service"
)

// home is the overview for a signed-in person and the sign-in page for
// anyone else.
func (h *Handler) home(w http.ResponseWriter, r *http.Request) {
	rq, ok := h.sessionOr(w, r, func() { h.render(w, r, nil, http.StatusOK, "login", view{Title: "Sign in"}) })
	if !ok {
		return
	}
	h.limited(w, r, rq, func(w http.ResponseWriter, r *http.Request) {
		if err := h.overview(w, r, rq, http.StatusOK, ""); err != nil {
			h.renderError(w, r, rq, err)
		}
	})
}

// workspaceGroup is one workspace of the overview with its projects.
type workspaceGroup struct {
	Name     string
	Projects []projectRow
}

// projectRow is one project of the overview, with the role the session's
// key for it has there.
type projectRow struct {
	service.ProjectSummary
	Role memory.Role
}

// overviewPage is the data of the overview.
type overviewPage struct {
	Groups []workspaceGroup
	// Keys are the session's keys, for "Your keys" (never a token).
	Keys []memory.Key
	// MaxKeys is how many keys a session may hold.
	MaxKeys int
}

// sessionOr returns the browser's session; without one it forgets a
// stale cookie, has signIn show a sign-in page and returns false (any
// other failure: an error page).
func (h *Handler) sessionOr(w http.ResponseWriter, r *http.Request, signIn func()) (*request, bool) {
	rq, err := h.signedIn(r)
	if err == nil {
		return rq, true
	}
	if memory.ErrorCode(err) != memory.CodeUnauthorized {
		h.renderError(w, r, nil, err)
		return nil, false
	}
	if _, cerr := r.Cookie(cookieName); cerr == nil {
		clearCookie(w, r)
	}
	signIn()
	return nil, false
}

// overview lists the workspaces and projects the session may see (the
// service decides: the projects of its keys, or every project for a
// server-admin key), the session's keys, and the form to add one. errMsg,
// when set, is why adding a key failed.
func (h *Handler) overview(w http.ResponseWriter, r *http.Request, rq *request, status int, errMsg string) error {
	projects, err := h.svc.Projects(r.Context(), rq.caller)
	if err != nil {
		return err
	}
	d := overviewPage{Keys: rq.caller.Keys(), MaxKeys: memory.MaxCallerKeys}
	// By workspace and name, whatever the order the keys were added in, so
	// each workspace is one group.
	slices.SortStableFunc(projects, func(a, b service.ProjectSummary) int {
		return cmp.Or(cmp.Compare(a.Ref.Workspace, b.Ref.Workspace), cmp.Compare(a.Ref.Project, b.Ref.Project))
	})
	for _, p := range projects {
		if len(d.Groups) == 0 || d.Groups[len(d.Groups)-1].Name != p.Ref.Workspace {
			d.Groups = append(d.Groups, workspaceGroup{Name: p.Ref.Workspace})
		}
		row := projectRow{ProjectSummary: p, Role: memory.RoleServerAdmin}
		if k, ok := rq.caller.KeyFor(p.Ref); ok {
			row.Role = k.Role
		}
		g := &d.Groups[len(d.Groups)-1]
		g.Projects = append(g.Projects, row)
	}
	h.render(w, r, rq, status, "overview", view{Title: "Projects", Error: errMsg, Data: d})
	return nil
}

// authenticate checks the keys pasted into the sign-in or add-a-key form
// exactly as bearer keys are checked: one key, or several separated by
// commas. For one key every refusal reads the same, so the form does not
// tell an unknown key from a revoked one; for several, which one was
// refused (by position, never by project).
func (h *Handler) authenticate(ctx context.Context, pasted string) (memory.Caller, error) {
	c, err := h.svc.Authenticate(ctx, pasted)
	if memory.ErrorCode(err) != memory.CodeUnauthorized {
		return c, err
	}
	if strings.Contains(pasted, ",") {
		switch msg := message(err); {
		case strings.Count(pasted, ",") >= memory.MaxCallerKeys:
			return c, memory.Errorf(memory.CodeUnauthorized, "paste at most %d keys, separated by commas", memory.MaxCallerKeys)
		case strings.HasPrefix(msg, "key "):
			return c, memory.Errorf(memory.CodeUnauthorized, "%s; check it and try again", msg)
		}
	}
	return c, memory.Errorf(memory.CodeUnauthorized, "that key is unknown or revoked; check it and try again")
}

// login takes a key (or a comma-separated list) from the sign-in form and
// starts a session. The key is checked exactly as a bearer key is; it never
// goes into the cookie, a page or a log.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if err := parseForm(r); err != nil {
		h.renderError(w, r, nil, err)
		return
	}
	c, err := h.authenticate(r.Context(), r.PostFormValue("key"))
	if err != nil {
		h.renderError(w, r, nil, err)
		return
	}
	sess := h.startSession(w, r, c)
	key := c.First()
	msg := "Signed in as " + key.Agent + " (" + string(key.Role) + " key of " + key.Project.String() + ")."
	if key.ServerAdmin() {
		msg = "Signed in as " + key.Agent + " (server-admin key: administers every project, reads no memory)."
	}
	if len(c.Keys()) > 1 {
		msg = "Signed in with " + strconv.Itoa(len(c.Keys())) + " keys: " + describeKeys(c.Keys()) + "."
	}
	h.sessions.setFlash(sess.id, msg)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// startSession signs the browser in as c (the sign-in page, and the OAuth
// authorize page's sign-in): a new session, which replaces any session this
// browser had.
func (h *Handler) startSession(w http.ResponseWriter, r *http.Request, c memory.Caller) session {
	noteCaller(r, c)
	if ck, cerr := r.Cookie(cookieName); cerr == nil {
		h.sessions.delete(ck.Value)
	}
	sess := h.sessions.create(c)
	setCookie(w, r, sess.id, 0)
	return sess
}

// describeKeys names keys for a message: "alice (write, ws/p), …".
func describeKeys(keys []memory.Key) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k.Agent + " (" + string(k.Role) + ", " + k.ProjectLabel() + ")"
	}
	return strings.Join(parts, ", ")
}

// addKey adds the pasted key (or keys) to the session, so one person sees
// several projects at once. The key is checked exactly as at sign-in; a
// key the session holds already changes nothing. A server-admin key is used
// alone: it joins no session and a server-admin session takes no other key.
func (h *Handler) addKey(w http.ResponseWriter, r *http.Request, rq *request) error {
	added, err := h.authenticate(r.Context(), r.PostFormValue("key"))
	var joined memory.Caller
	if err == nil {
		joined, err = service.Join(rq.caller, added)
	}
	if err != nil {
		if c := memory.ErrorCode(err); c != memory.CodeUnauthorized && c != memory.CodeInvalid {
			return err
		}
		// The refusal is shown on the overview: the session goes on.
		return h.overview(w, r, rq, statusOf(err), message(err))
	}
	var fresh []memory.Key // keys that now count in the session
	for _, k := range joined.Keys() {
		if !rq.sess.holdsKey(k.ID) {
			fresh = append(fresh, k)
		}
	}
	if len(fresh) == 0 {
		return h.redirect(w, r, rq, "/", "Nothing changed: this session holds that key already, or a key with at least its role for the same project.")
	}
	sess, ok := h.sessions.setKeys(rq.sess.id, joined)
	if !ok {
		return memory.Errorf(memory.CodeUnauthorized, "your session has ended; sign in again")
	}
	setCookie(w, r, sess.id, 0)
	rq.sess = sess
	noun := "key"
	if len(fresh) > 1 {
		noun = "keys"
	}
	return h.redirect(w, r, rq, "/", "Added the "+noun+" of "+describeKeys(fresh)+". This session now reaches "+strconv.Itoa(len(joined.Keys()))+" projects.")
}

// removeKey takes a key out of the session; its last key cannot be removed
// (sign out instead).
func (h *Handler) removeKey(w http.ResponseWriter, r *http.Request, rq *request) error {
	id, err := strconv.ParseInt(mux.Vars(r)["id"], 10, 64)
	if err != nil {
		return memory.Errorf(memory.CodeInvalid, "key id must be a number")
	}
	var rest []memory.Key
	var gone memory.Key
	for _, k := range rq.caller.Keys() {
		if k.ID == id {
			gone = k
			continue
		}
		rest = append(rest, k)
	}
	switch {
	case gone.ID == 0:
		return memory.Errorf(memory.CodeNotFound, "this session holds no key %d", id)
	case len(rest) == 0:
		return memory.Errorf(memory.CodeInvalid, "that is the only key of this session: sign out instead")
	}
	sess, ok := h.sessions.setKeys(rq.sess.id, memory.NewCaller(rest...))
	if !ok {
		return memory.Errorf(memory.CodeUnauthorized, "your session has ended; sign in again")
	}
	setCookie(w, r, sess.id, 0)
	rq.sess = sess
	return h.redirect(w, r, rq, "/", "Removed the key of "+describeKeys([]memory.Key{gone})+" from this session.")
}

// logout ends the session.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request, rq *request) error {
	h.sessions.delete(rq.sess.id)
	clearCookie(w, r)
	http.Redirect(w, r, "/", http.StatusSeeOther)
	return nil
}
