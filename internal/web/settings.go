package web

import (
	"context"
	"net/http"

	"munin/internal/memory"
)

// The settings page's project settings (review, similar): each is a form
// of radio buttons posted to /settings/<name>; the service checks the role
// and the value, and the page comes back with a sentence saying what the
// new value does.

// saveSetting reads the form field name, hands it to set and sends the
// admin back to the settings page with said(value).
func (h *Handler) saveSetting(w http.ResponseWriter, r *http.Request, rq *request, name string,
	set func(context.Context, memory.Caller, memory.ProjectRef, string) error, said func(string) string) error {
	key, err := h.scoped(r, rq)
	if err != nil {
		return err
	}
	value := r.PostFormValue(name)
	if err := set(r.Context(), rq.caller, key.Project, value); err != nil {
		return err
	}
	return h.redirect(w, r, rq, projectURL(key.Project)+"/settings", said(value))
}

// saveSimilar switches the duplicate hint of remember on or off for the
// project.
func (h *Handler) saveSimilar(w http.ResponseWriter, r *http.Request, rq *request) error {
	return h.saveSetting(w, r, rq, "similar", h.svc.SetSimilar, func(v string) string {
		if v == memory.SimilarOff {
			return "The duplicate hint is off: remember no longer looks for existing entries that a new one repeats."
		}
		return "The duplicate hint is on: remember warns when a new entry repeats an existing one."
	})
}
