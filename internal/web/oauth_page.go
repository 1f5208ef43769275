package web

import (
	"net/http"
	"strconv"

	"munin/internal/memory"
)

// oauthPage is what templates/oauth.html shows: the sign-in form of an
// authorization request, or, signed in, the consent for the session's keys.
type oauthPage struct {
	// Consent: signed in, the page asks to allow or deny.
	Consent bool
	// Client is the name the client gave itself; Target says where the
	// browser goes afterwards, which is what the person can check.
	Client string
	Target redirectTarget
	// Params are the request's parameters, carried in every form.
	Params []oauthParam
	// Projects are what the app would reach, one row per key of the
	// session; empty for a server-admin session, which ServerAdmin marks.
	Projects    []consentRow
	ServerAdmin bool
	MaxKeys     int
	// GrantDays is how long a consent lasts at most (memory.OAuthGrantTTL).
	GrantDays string
}

// consentRow is one project the app would reach.
type consentRow struct {
	Project, Verb, Agent string
	Role                 memory.Role
}

// verbOf says what a key of role lets an app do with its project.
func verbOf(role memory.Role) string {
	switch role {
	case memory.RoleRead:
		return "read"
	case memory.RolePropose:
		return "read and propose changes to"
	default:
		return "read and write"
	}
}

// renderOAuth shows the sign-in page (rq nil) or the consent for rq's keys,
// with errMsg when the last step failed.
func (h *Handler) renderOAuth(w http.ResponseWriter, r *http.Request, rq *request, az *authorization, status int, errMsg string) {
	d := oauthPage{Client: az.a.Client.Name, Target: az.target, MaxKeys: memory.MaxCallerKeys,
		GrantDays: strconv.Itoa(int(memory.OAuthGrantTTL.Hours() / 24))}
	if d.Client == "" {
		d.Client = "An unnamed app"
	}
	req := az.req
	for _, p := range []oauthParam{
		{"response_type", req.ResponseType}, {"client_id", req.ClientID}, {"redirect_uri", req.RedirectURI}, {"state", req.State},
		{"code_challenge", req.CodeChallenge}, {"code_challenge_method", req.CodeChallengeMethod},
		{"resource", req.Resource}, {"scope", req.Scope},
	} {
		if p.Value != "" {
			d.Params = append(d.Params, p)
		}
	}
	title := "Sign in to connect " + d.Client
	if rq != nil {
		d.Consent, d.ServerAdmin, title = true, rq.caller.ServerAdmin(), "Allow "+d.Client+"?"
		if d.ServerAdmin && errMsg == "" {
			errMsg = serverAdminRefusal
		}
		if !d.ServerAdmin {
			for _, k := range rq.caller.Keys() {
				d.Projects = append(d.Projects, consentRow{Project: k.ProjectLabel(), Verb: verbOf(k.Role), Agent: k.Agent, Role: k.Role})
			}
		}
	}
	h.render(w, r, rq, status, "oauth", view{Title: title, Error: errMsg, Data: d})
}
