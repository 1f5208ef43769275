package httpserver

import (
	"net/http"
	"strings"

	"munin/internal/api"
	"munin/internal/memory"
	"munin/internal/reqlog"
	"munin/internal/service"
)

// requireKey authenticates "Authorization: Bearer <key>" and puts the key in
// the request context (service.WithKey); handlers behind it never look at
// credentials. A missing, malformed, unknown or revoked key is a 401 with
// WWW-Authenticate (set by api.WriteError).
func requireKey(svc *service.Service, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, err := bearerToken(r)
		if err != nil {
			api.WriteError(w, err)
			return
		}
		key, err := svc.Authenticate(r.Context(), token)
		if err != nil {
			api.WriteError(w, err)
			return
		}
		reqlog.NoteCaller(r.Context(), key.Agent, key.ProjectLabel())
		next.ServeHTTP(w, r.WithContext(service.WithKey(r.Context(), key)))
	})
}

// bearerToken extracts the token; the scheme name is case-insensitive (RFC 9110).
func bearerToken(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", memory.Errorf(memory.CodeUnauthorized, "missing key: send Authorization: Bearer munin_…")
	}
	scheme, token, _ := strings.Cut(strings.TrimSpace(h), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", memory.Errorf(memory.CodeUnauthorized, "Authorization must use the Bearer scheme: Authorization: Bearer munin_…")
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return "", memory.Errorf(memory.CodeUnauthorized, "missing key after Bearer")
	}
	return token, nil
}
