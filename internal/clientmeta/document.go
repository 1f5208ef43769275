package clientmeta

import (
	"bytes"
	"encoding/json"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"munin/internal/memory"
)

// Document bounds.
const (
	MaxNameLength   = 200  // client_name, in characters
	MaxRedirectURIs = 16   // redirect_uris entries
	maxRedirectURI  = 2048 // bytes of one redirect URI
)

// parseDocument checks a Client ID Metadata Document fetched from clientID
// and returns the client it describes. Errors name the rule broken and never
// quote the document: it is a stranger's text.
func parseDocument(clientID string, body []byte) (memory.OAuthClient, error) {
	bad := func(rule string) error {
		return memory.Errorf(memory.CodeInvalid, "client metadata document %s", rule)
	}
	m, err := members(body)
	if err != nil {
		return memory.OAuthClient{}, bad(err.Error())
	}
	if id, ok := jsonString(m["client_id"]); !ok || id != clientID {
		return memory.OAuthClient{}, bad("must have a client_id equal to the URL it was fetched from")
	}
	name, ok := jsonString(m["client_name"])
	if !ok {
		return memory.OAuthClient{}, bad("must have a client_name string")
	}
	if rule := nameRule(name); rule != "" {
		return memory.OAuthClient{}, bad("client_name " + rule)
	}
	uris, ok := jsonStrings(m["redirect_uris"])
	switch {
	case !ok:
		return memory.OAuthClient{}, bad("must have redirect_uris, an array of strings")
	case len(uris) == 0:
		return memory.OAuthClient{}, bad("redirect_uris must not be empty")
	case len(uris) > MaxRedirectURIs:
		return memory.OAuthClient{}, bad("must have at most " + strconv.Itoa(MaxRedirectURIs) + " redirect_uris")
	}
	for i, u := range uris {
		if rule := redirectRule(u); rule != "" {
			return memory.OAuthClient{}, memory.Errorf(memory.CodeInvalid,
				"client metadata document redirect_uris[%d] %s", i, rule)
		}
	}
	// A document anyone can read holds no secret: CIMD clients are public,
	// and shared-secret authentication is refused for them.
	for _, k := range []string{"client_secret", "client_secret_expires_at"} {
		if _, ok := m[k]; ok {
			return memory.OAuthClient{}, bad("must not contain " + k)
		}
	}
	if raw, ok := m["token_endpoint_auth_method"]; ok {
		if method, _ := jsonString(raw); method != "none" {
			return memory.OAuthClient{}, bad(`token_endpoint_auth_method must be "none" (shared-secret methods are not allowed for a client metadata document)`)
		}
	}
	if raw, ok := m["grant_types"]; ok {
		if grants, ok := jsonStrings(raw); !ok || !slices.Contains(grants, "authorization_code") {
			return memory.OAuthClient{}, bad(`grant_types must be an array of strings containing "authorization_code"`)
		}
	}
	return memory.OAuthClient{ID: clientID, Kind: memory.OAuthClientCIMD, Name: name, RedirectURIs: uris}, nil
}

// members splits a JSON object into its members. It refuses what
// encoding/json would let pass: a top level that is not an object (null
// included), a member named twice (the checks and a later reader could see
// different values), and anything after the object.
func members(body []byte) (map[string]json.RawMessage, error) {
	notObject := ruleError("must be a JSON object")
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, notObject
	}
	m := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		key, isKey := tok.(string)
		if err != nil || !isKey {
			return nil, notObject
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, notObject
		}
		if _, dup := m[key]; dup {
			return nil, ruleError("must not name a member twice")
		}
		m[key] = raw
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, notObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, ruleError("must hold nothing after its JSON object")
	}
	return m, nil
}

// jsonString decodes raw if it is a JSON string (not null, not a number).
func jsonString(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// jsonStrings decodes raw if it is a JSON array of strings.
func jsonStrings(raw json.RawMessage) ([]string, bool) {
	var items []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, false
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		s, ok := jsonString(it)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// nameRule returns the rule client_name breaks, or "". The name is shown on
// the consent page, so control characters and bidirectional overrides
// (which can make one name look like another) are refused.
func nameRule(name string) string {
	switch {
	case strings.TrimSpace(name) == "":
		return "must not be empty"
	case utf8.RuneCountInString(name) > MaxNameLength:
		return "must be at most " + strconv.Itoa(MaxNameLength) + " characters"
	}
	for _, r := range name {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return "must not contain control characters"
		}
	}
	return ""
}

// redirectRule returns the rule a redirect URI breaks, or "". Allowed: an
// absolute https URL; http on a loopback host (127.0.0.1, [::1], localhost,
// any port: RFC 8252 §7.3); a private-use scheme of reverse-domain form
// (com.example.app:/callback, RFC 8252 §7.1). None may carry a fragment or
// userinfo (RFC 6749 §3.1.2).
func redirectRule(raw string) string {
	if raw == "" || len(raw) > maxRedirectURI {
		return "must be 1 to 2048 bytes"
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Scheme == "":
		return "must be an absolute URI"
	case strings.Contains(raw, "#"):
		return "must not contain a fragment"
	case u.User != nil:
		return "must not contain userinfo"
	}
	switch u.Scheme {
	case "https":
		if u.Opaque != "" || u.Hostname() == "" {
			return "must be an https URL with a host"
		}
	case "http":
		switch strings.ToLower(u.Hostname()) {
		case "127.0.0.1", "::1", "localhost":
		default:
			return "may use http only on a loopback host (127.0.0.1, [::1], localhost)"
		}
	default:
		if !reverseDomain(u.Scheme) {
			return "must be https, loopback http, or a private-use scheme of reverse-domain form (com.example.app:/callback)"
		}
	}
	return ""
}

// reverseDomain reports whether scheme reads as a domain name in reverse
// order: two or more dot-separated labels of letters, digits and hyphens.
func reverseDomain(scheme string) bool {
	labels := strings.Split(scheme, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || strings.Trim(l, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			return false
		}
	}
	return true
}
