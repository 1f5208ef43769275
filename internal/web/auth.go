package web

import (
	"net/http"

	"munin/internal/memory"
	"munin/internal/reqlog"
	"munin/internal/service"
)

// home is the overview for a signed-in person and the sign-in page for
// anyone else.
func (h *Handler) home(w http.ResponseWriter, r *http.Request) {
	rq, err := h.signedIn(r)
	if err != nil {
		if memory.ErrorCode(err) != memory.CodeUnauthorized {
			h.renderError(w, r, nil, err)
			return
		}
		if _, cerr := r.Cookie(cookieName); cerr == nil {
			clearCookie(w, r)
		}
		h.render(w, r, nil, http.StatusOK, "login", view{Title: "Sign in"})
		return
	}
	h.limited(w, r, rq, func(w http.ResponseWriter, r *http.Request) {
		if err := h.overview(w, r, rq); err != nil {
			h.renderError(w, r, rq, err)
		}
	})
}

// workspaceGroup is one workspace of the overview with its projects.
type workspaceGroup struct {
	Name     string
	Projects []service.ProjectSummary
}

// overview lists the workspaces and projects the key may see (the service
// decides: its own project, or every project for a server-admin key).
func (h *Handler) overview(w http.ResponseWriter, r *http.Request, rq *request) error {
	projects, err := h.svc.Projects(r.Context(), rq.caller)
	if err != nil {
		return err
	}
	var groups []workspaceGroup
	for _, p := range projects {
		if len(groups) == 0 || groups[len(groups)-1].Name != p.Ref.Workspace {
			groups = append(groups, workspaceGroup{Name: p.Ref.Workspace})
		}
		g := &groups[len(groups)-1]
		g.Projects = append(g.Projects, p)
	}
	h.render(w, r, rq, http.StatusOK, "overview", view{Title: "Projects", Data: groups})
	return nil
}

// login takes a key from the sign-in form and starts a session. The key is
// checked exactly as a bearer key is; it never goes into the cookie, a page
// or a log.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if err := parseForm(r); err != nil {
		h.renderError(w, r, nil, err)
		return
	}
	c, err := h.svc.Authenticate(r.Context(), r.PostFormValue("key"))
	key := c.First()
	if err != nil {
		if memory.ErrorCode(err) == memory.CodeUnauthorized {
			// One message for missing, unknown and revoked keys.
			err = memory.Errorf(memory.CodeUnauthorized, "that key is unknown or revoked; check it and try again")
		}
		h.renderError(w, r, nil, err)
		return
	}
	reqlog.NoteCaller(r.Context(), key.Agent, key.ProjectLabel())
	// A new sign-in replaces any session this browser had.
	if c, cerr := r.Cookie(cookieName); cerr == nil {
		h.sessions.delete(c.Value)
	}
	sess := h.sessions.create(key.ID, key.ProjectLabel())
	setCookie(w, r, sess.id, 0)
	what := string(key.Role) + " key of " + key.Project.String()
	if key.ServerAdmin() {
		what = "server-admin key: administers every project, reads no memory"
	}
	h.sessions.setFlash(sess.id, "Signed in as "+key.Agent+" ("+what+").")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout ends the session.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request, rq *request) error {
	h.sessions.delete(rq.sess.id)
	clearCookie(w, r)
	http.Redirect(w, r, "/", http.StatusSeeOther)
	return nil
}
