package httpserver

import (
	"errors"
	"net/http"
	"strings"

	"munin/internal/api"
	"munin/internal/memory"
	"munin/internal/oauth"
	"munin/internal/reqlog"
	"munin/internal/service"
)

// requireKey authenticates "Authorization: Bearer <key>[,<key>…]" (one
// agent, several projects) and puts the caller in the request context
// (service.WithCaller); handlers behind it never look at credentials. A
// missing, malformed, unknown or revoked key is a 401 with WWW-Authenticate
// (set by api.WriteError) that names its position in the list.
func requireKey(svc *service.Service, next http.Handler) http.Handler {
	return requireCaller(svc, bearerAuth{}, next)
}

// bearerAuth says what a route accepts besides keys.
type bearerAuth struct {
	// oauth, when set, is the server's OAuth configuration: an access
	// token bound to the resource at path is accepted too, and a 401 names
	// where its metadata is (RFC 9728), so that a client can sign in.
	oauth *oauth.Config
	path  string
}

// requireCaller is requireKey for a route that may also take OAuth access
// tokens (auth.oauth set): a token acts as exactly the keys it was signed
// in with, and only at the resource it was issued for.
func requireCaller(svc *service.Service, auth bearerAuth, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, err := bearerToken(r)
		if err == nil {
			var c memory.Caller
			switch {
			case service.IsOAuthToken(token) && auth.oauth != nil:
				c, err = svc.AuthenticateOAuth(r.Context(), token, auth.oauth.Resource(auth.path))
			case service.IsOAuthToken(token):
				err = memory.Errorf(memory.CodeUnauthorized, "OAuth tokens are not accepted here: send Authorization: Bearer munin_… with a key")
			default:
				c, err = svc.Authenticate(r.Context(), token)
			}
			if err == nil {
				noteCaller(r, c)
				next.ServeHTTP(w, r.WithContext(service.WithCaller(r.Context(), c)))
				return
			}
		}
		noteRefused(r, err)
		if auth.oauth != nil && memory.ErrorCode(err) == memory.CodeUnauthorized {
			w.Header().Set("WWW-Authenticate", auth.oauth.Challenge(auth.path, token != ""))
		}
		api.WriteError(w, err)
	})
}

// noteRefused tells the request log why the request was refused: the
// message the client gets, which names a key's position in the list and
// never a key or a project. Other errors (a failing database) are logged
// where they are answered.
func noteRefused(r *http.Request, err error) {
	var me *memory.Error
	if errors.As(err, &me) && me.Code == memory.CodeUnauthorized {
		reqlog.NoteRefused(r.Context(), me.Message)
	}
}

// noteCaller names the caller in the request log: its first key's agent and
// the projects of all its keys.
func noteCaller(r *http.Request, c memory.Caller) {
	projects := make([]string, 0, len(c.Keys()))
	for _, k := range c.Keys() {
		projects = append(projects, k.ProjectLabel())
	}
	reqlog.NoteCaller(r.Context(), c.First().Agent, strings.Join(projects, ","))
}

// bearerToken extracts the token list: the text after "Bearer ", spaces
// around it trimmed (Authenticate splits it at the commas and trims each
// key). The scheme name is case-insensitive (RFC 9110). Several keys go in
// one header; a second Authorization header is refused rather than
// ignored, since a caller sending one per key would otherwise act with
// the first alone and wonder why its other projects are forbidden.
func bearerToken(r *http.Request) (string, error) {
	hs := r.Header.Values("Authorization")
	if len(hs) > 1 {
		return "", memory.Errorf(memory.CodeUnauthorized, "%d Authorization headers sent; send one, with several keys comma-separated: Authorization: Bearer munin_…,munin_…", len(hs))
	}
	h := ""
	if len(hs) == 1 {
		h = hs[0]
	}
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
