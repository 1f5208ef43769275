package api

import (
	"net/http"

	"munin/internal/memory"
)

// A project's settings (review, similar) are each set by a PUT of
// {project, <setting>}; the answer is 204, or the service's error: 400
// invalid for a value it does not know (the message names the allowed
// ones), 403 for a key that does not administer the project.

// putSetting decodes the body of a setting's PUT into a T and hands it to
// set: 204 when set succeeded.
func putSetting[T any](w http.ResponseWriter, r *http.Request, set func(in T) error) error {
	var in T
	if err := decodeJSON(w, r, &in); err != nil {
		return err
	}
	if err := set(in); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// similarRequest is the body of PUT /project/similar.
type similarRequest struct {
	Project string `json:"project"`
	Similar string `json:"similar"`
}

// setSimilar: PUT /project/similar {project, similar} → 204.
func (h *handler) setSimilar(w http.ResponseWriter, r *http.Request, c memory.Caller) error {
	return putSetting(w, r, func(in similarRequest) error { return h.svc.SetSimilarOf(r.Context(), c, in.Project, in.Similar) })
}
