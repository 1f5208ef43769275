package service

import (
	"context"
	"strings"

	"munin/internal/memory"
)

// maxKeysHeader bounds the key list read at all: MaxCallerKeys tokens of at
// most MaxKeyToken bytes with their commas and some spaces.
const maxKeysHeader = memory.MaxCallerKeys * (memory.MaxKeyToken + 8)

var errMissingKey = memory.Errorf(memory.CodeUnauthorized, "missing key: send Authorization: Bearer munin_…")

// Authenticate turns a bearer token list ("munin_a, munin_b": one agent,
// several projects) into the caller it names. Every key must be live: one
// unknown, malformed or revoked key refuses the whole list, naming its
// position and never a project. A repeated key counts once; a server-admin
// key is used alone.
func (s *Service) Authenticate(ctx context.Context, tokens string) (memory.Caller, error) {
	if len(tokens) > maxKeysHeader {
		return memory.Caller{}, memory.Errorf(memory.CodeUnauthorized, "the key list is %d bytes; at most %d keys of at most %d bytes each fit", len(tokens), memory.MaxCallerKeys, memory.MaxKeyToken)
	}
	list := strings.Split(tokens, ",")
	if strings.TrimSpace(tokens) == "" {
		return memory.Caller{}, errMissingKey
	}
	if len(list) > memory.MaxCallerKeys {
		return memory.Caller{}, memory.Errorf(memory.CodeUnauthorized, "%d keys sent; at most %d keys fit in one Authorization header", len(list), memory.MaxCallerKeys)
	}
	keys := make([]memory.Key, 0, len(list))
	at := make([]int, 0, len(list)) // each key's position in the list sent
	seen := make(map[string]bool, len(list))
	for i, token := range list {
		token = strings.TrimSpace(token)
		if seen[token] {
			continue
		}
		seen[token] = true
		k, err := s.keyByToken(ctx, token)
		if err != nil {
			return memory.Caller{}, positioned(err, i, len(list))
		}
		keys = append(keys, k)
		at = append(at, i)
	}
	if len(keys) > 1 {
		for i, k := range keys {
			if k.ServerAdmin() {
				return memory.Caller{}, memory.Errorf(memory.CodeUnauthorized, "key %d of %d is a server-admin key, which is used alone", at[i]+1, len(list))
			}
		}
	}
	return memory.NewCaller(keys...), nil
}

// keyByToken looks up one token of the list.
func (s *Service) keyByToken(ctx context.Context, token string) (memory.Key, error) {
	if token == "" {
		return memory.Key{}, memory.Errorf(memory.CodeUnauthorized, "empty key")
	}
	if !strings.HasPrefix(token, memory.KeyPrefix) || len(token) > memory.MaxKeyToken {
		return memory.Key{}, memory.Errorf(memory.CodeUnauthorized, "unknown or revoked key")
	}
	return s.store.KeyByToken(ctx, token)
}

// positioned names the position of a refused key in a list of more than one.
func positioned(err error, i, n int) error {
	if n == 1 || memory.ErrorCode(err) != memory.CodeUnauthorized {
		return err
	}
	what := "is unknown or revoked"
	if strings.HasPrefix(memory.PublicMessage(err), "unauthorized: empty key") {
		what = "is empty"
	}
	return memory.Errorf(memory.CodeUnauthorized, "key %d of %d %s", i+1, n, what)
}

// AuthenticateMemory is Authenticate for a transport that serves memory
// tools only (munin stdio): a server-admin key, which reads no memory, is
// refused at once rather than on every call.
func (s *Service) AuthenticateMemory(ctx context.Context, tokens string) (memory.Caller, error) {
	c, err := s.Authenticate(ctx, tokens)
	if err != nil {
		return memory.Caller{}, err
	}
	if c.ServerAdmin() {
		return memory.Caller{}, errMemoryTools
	}
	return c, nil
}

// Join is the caller of c's keys and added's together, as when a person
// adds a key to a signed-in web session: under Authenticate's rules, a
// server-admin key is used alone and a caller holds at most
// memory.MaxCallerKeys keys, one per project.
func Join(c, added memory.Caller) (memory.Caller, error) {
	if c.ServerAdmin() && added.Owner() != c.Owner() {
		return memory.Caller{}, memory.Errorf(memory.CodeInvalid, "this session holds a server-admin key, which is used alone: sign out, then sign in with the other key")
	}
	if added.ServerAdmin() && added.Owner() != c.Owner() {
		return memory.Caller{}, memory.Errorf(memory.CodeInvalid, "that is a server-admin key, which is used alone: sign out, then sign in with it")
	}
	joined := memory.NewCaller(append(c.Keys(), added.Keys()...)...)
	if n := len(joined.Keys()); n > memory.MaxCallerKeys {
		return memory.Caller{}, memory.Errorf(memory.CodeInvalid, "a session holds at most %d keys (one per project); remove one first", memory.MaxCallerKeys)
	}
	return joined, nil
}

type callerCtx struct{}

// WithCaller returns ctx carrying the authenticated caller; transports set
// it once after authentication so handlers never read credentials themselves.
func WithCaller(ctx context.Context, c memory.Caller) context.Context {
	return context.WithValue(ctx, callerCtx{}, c)
}

// CallerFrom returns the authenticated caller of ctx, or CodeUnauthorized.
func CallerFrom(ctx context.Context) (memory.Caller, error) {
	c, ok := ctx.Value(callerCtx{}).(memory.Caller)
	if !ok || c.Empty() {
		return memory.Caller{}, errMissingKey
	}
	return c, nil
}

// target is the key a memory call acts with: the caller's key for the
// project it names, or its first key when it names none. A project the
// caller holds no key for is forbidden, in the same words whether it exists
// or not. A caller without keys is unauthorized: it never reaches a
// store call as a zero key.
func target(c memory.Caller, project string) (memory.Key, error) {
	if c.Empty() {
		return memory.Key{}, errMissingKey
	}
	if c.ServerAdmin() {
		return memory.Key{}, errMemoryTools
	}
	if project == "" {
		return c.First(), nil
	}
	ref, err := memory.ParseProject("project", project)
	if err != nil {
		return memory.Key{}, err
	}
	return keyFor(c, ref)
}

// keyFor is the caller's key for ref, or forbidden.
func keyFor(c memory.Caller, ref memory.ProjectRef) (memory.Key, error) {
	k, ok := c.KeyFor(ref)
	if !ok {
		return memory.Key{}, memory.Errorf(memory.CodeForbidden, "no key for project %s", ref)
	}
	return k, nil
}

// Me says which projects the caller reaches, with which role and agent.
func (s *Service) Me(c memory.Caller) Me {
	if c.ServerAdmin() {
		return Me{Projects: []ProjectAccess{}, ServerAdmin: true}
	}
	out := Me{Projects: make([]ProjectAccess, 0, len(c.Keys()))}
	for _, k := range c.Keys() {
		out.Projects = append(out.Projects, ProjectAccess{Project: k.Project.String(), Role: k.Role, Agent: k.Agent})
	}
	return out
}
