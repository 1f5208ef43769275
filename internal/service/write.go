package service

import (
	"context"
	"strings"

	"munin/internal/memory"
)

// Remember stores a new version of an entry in a project of the caller.
func (s *Service) Remember(ctx context.Context, c memory.Caller, req RememberRequest) (WriteResult, error) {
	key, err := target(c, req.Project)
	if err != nil {
		return WriteResult{}, err
	}
	return s.rememberBy(ctx, c, key, req)
}

// remember is Remember with the key already chosen, for an agent.
func (s *Service) remember(ctx context.Context, key memory.Key, req RememberRequest) (WriteResult, error) {
	return s.rememberBy(ctx, memory.Caller{}, key, req)
}

// rememberBy is Remember with the key already chosen; c tells whether a
// person makes the call (see reviewOf) and names the OAuth client its audit
// row records (memory.Caller.Client).
func (s *Service) rememberBy(ctx context.Context, c memory.Caller, key memory.Key, req RememberRequest) (WriteResult, error) {
	if err := readsMemory(key); err != nil {
		return WriteResult{}, err
	}
	review, err := reviewOf(c, key, "remember")
	if err != nil {
		return WriteResult{}, err
	}
	w := memory.Write{
		Slug:            req.Slug,
		Title:           req.Title,
		Content:         req.Content,
		Tags:            req.Tags,
		Agent:           key.Agent,
		ExpectedVersion: req.ExpectedVersion,
		IdempotencyKey:  req.IdempotencyKey,
		Supersedes:      req.Supersedes,
		Review:          review,
		Client:          c.Client(),
	}
	if err := s.checkRemember(&req, &w); err != nil {
		return WriteResult{}, err
	}
	res, err := s.write(ctx, key, "remember", w)
	if err != nil {
		return WriteResult{}, err
	}
	res.Similar = s.similarIfNew(ctx, key, w, res)
	return res, nil
}

// reviewOf is how the writes of key's role reach the project: a propose key
// always proposes, a write key proposes when the project reviews the
// writes of agents, an admin key writes directly. A person in the web UI
// (c.Person) is no agent: with a write key it writes directly, and with a
// propose key it only reads (proposals are the agents' way in; a person
// who may not write asks an admin). Read keys are refused later, by
// proposes, with their role named.
func reviewOf(c memory.Caller, key memory.Key, what string) (memory.Review, error) {
	switch {
	case key.Role == memory.RolePropose && c.Person():
		return 0, memory.Errorf(memory.CodeForbidden, "key of %s has role propose: in the web UI it reads; only agents propose (%s)", key.Agent, what)
	case key.Role == memory.RolePropose:
		return memory.ProposeAlways, nil
	case key.Role == memory.RoleWrite && !c.Person():
		return memory.ProposeIfReviewed, nil
	}
	return memory.WriteDirect, nil
}

// Forget writes a tombstone version; the history stays.
func (s *Service) Forget(ctx context.Context, c memory.Caller, req ForgetRequest) (WriteResult, error) {
	key, err := target(c, req.Project)
	if err != nil {
		return WriteResult{}, err
	}
	return s.forget(ctx, c, key, req.Slug, req.ExpectedVersion)
}

// forget is Forget with the key already chosen; c tells whether a person
// makes the call (see reviewOf) and names the OAuth client its audit row
// records.
func (s *Service) forget(ctx context.Context, c memory.Caller, key memory.Key, slug string, expectedVersion *int) (WriteResult, error) {
	if err := readsMemory(key); err != nil {
		return WriteResult{}, err
	}
	review, err := reviewOf(c, key, "forget")
	if err != nil {
		return WriteResult{}, err
	}
	if err := memory.ValidateSlug(slug); err != nil {
		return WriteResult{}, err
	}
	if err := checkExpected(expectedVersion); err != nil {
		return WriteResult{}, err
	}
	return s.write(ctx, key, "forget", memory.Write{
		Slug:            slug,
		Agent:           key.Agent,
		Deleted:         true,
		ExpectedVersion: expectedVersion,
		Review:          review,
		Client:          c.Client(),
	})
}

// write is the one write path: role → budget and store (with audit) → index.
func (s *Service) write(ctx context.Context, key memory.Key, op string, w memory.Write) (WriteResult, error) {
	res, err := s.append(ctx, key, op, w)
	if err != nil {
		return WriteResult{}, err
	}
	out := WriteResult{Project: key.Project.String(), Slug: res.Slug, Version: res.Version, CreatedAt: res.CreatedAt.UTC(), similarOff: res.SimilarOff}
	if res.Proposal != 0 {
		base := res.BaseVersion
		out.State, out.Proposal, out.BaseVersion = memory.ProposalPending, ProposalID(key.Project, res.Proposal), &base
	}
	return out, nil
}

// append is write's body: it answers the store's result. The store counts
// the write against the project's budget (Budgeted: here, or at the
// workspace's owner in a cluster).
func (s *Service) append(ctx context.Context, key memory.Key, op string, w memory.Write) (memory.WriteResult, error) {
	if err := proposes(key, op); err != nil {
		return memory.WriteResult{}, err
	}
	res, err := s.store.Append(ctx, key.Project, w)
	if err != nil {
		return memory.WriteResult{}, s.internalErr(op, key, err)
	}
	if res.Replayed || res.Proposal != 0 {
		return res, nil // the first write queued its refresh; a proposal changes no entry
	}
	// The write is committed; queue its index refresh before we answer, so
	// every later recall waits for it (read-your-writes) while this call does
	// not. Queue fails only when the index is shut down, and a new one is
	// built from the database.
	if err := s.index.Queue(key.Project, w.Slug); err != nil {
		s.log.Error("index refresh not queued", "project", key.Project.String(), "slug", w.Slug, "err", err)
	}
	return res, nil
}

// checkRemember checks the request, fills in its defaults and sets the
// fields of w that need parsing.
func (s *Service) checkRemember(in *RememberRequest, w *memory.Write) error {
	if err := memory.ValidateSlug(in.Slug); err != nil {
		return err
	}
	if strings.TrimSpace(in.Content) == "" {
		return memory.Errorf(memory.CodeInvalid, "content must not be empty")
	}
	if err := memory.ValidateText("content", in.Content, s.opts.MaxContent); err != nil {
		return err
	}
	if err := memory.ValidateTitle(in.Title); err != nil {
		return err
	}
	if err := memory.ValidateTags(in.Tags); err != nil {
		return err
	}
	if err := memory.ValidateText("idempotency_key", in.IdempotencyKey, memory.MaxIdempotencyKey); err != nil {
		return err
	}
	if in.Title == "" {
		in.Title = titleFromContent(in.Content)
	}
	in.Tags = dedupe(in.Tags)
	w.Title, w.Tags = in.Title, in.Tags
	validUntil, err := parseValidUntil(in.ValidUntil, s.opts.Now())
	if err != nil {
		return err
	}
	w.ValidUntil = validUntil
	if err := checkSupersedes(in.Slug, in.Supersedes); err != nil {
		return err
	}
	return checkExpected(in.ExpectedVersion)
}

func checkExpected(v *int) error {
	if v != nil && *v < 0 {
		return memory.Errorf(memory.CodeInvalid, "expected_version must be 0 or more, got %d", *v)
	}
	return nil
}

func dedupe(tags []string) []string {
	out := make([]string, 0, len(tags))
	seen := make(map[string]bool, len(tags))
	for _, t := range tags {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}
