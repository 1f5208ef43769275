package control

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"munin/internal/memory"
)

// CreateKey makes a new key for an agent in an existing project. It returns
// the token, which is shown once: only its SHA-256 goes to etcd.
func (c *Control) CreateKey(ctx context.Context, ref memory.ProjectRef, agent string, role memory.Role) (string, memory.Key, error) {
	if err := ref.Validate(); err != nil {
		return "", memory.Key{}, err
	}
	if err := memory.ValidateAgent(agent); err != nil {
		return "", memory.Key{}, err
	}
	if _, err := memory.ParseRole(string(role)); err != nil {
		return "", memory.Key{}, err
	}
	return c.insertKey(ctx, keyRecord{Workspace: ref.Workspace, Project: ref.Project, Agent: agent, Role: string(role)})
}

// CreateServerAdminKey makes a server-admin key, which belongs to no
// project. It returns the token, shown once.
func (c *Control) CreateServerAdminKey(ctx context.Context, agent string) (string, memory.Key, error) {
	if err := memory.ValidateAgent(agent); err != nil {
		return "", memory.Key{}, err
	}
	return c.insertKey(ctx, keyRecord{Agent: agent, Role: string(memory.RoleServerAdmin)})
}

// insertKey stores r (its fields already checked) under a new token and a
// random id. One transaction per drawn id checks that the project exists
// (for a project key) and that neither the id nor the token hash is taken;
// a taken id is drawn again.
func (c *Control) insertKey(ctx context.Context, r keyRecord) (string, memory.Key, error) {
	token, err := memory.NewToken()
	if err != nil {
		return "", memory.Key{}, err
	}
	ref := memory.ProjectRef{Workspace: r.Workspace, Project: r.Project}
	what := fmt.Sprintf("create key for %s in %s", r.Agent, memory.Key{Project: ref}.ProjectLabel())
	r.Hash = memory.HashToken(token)
	r.CreatedAt = time.Now().UTC().UnixNano()
	hk := c.paths.keyHash(r.Hash)
	tctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	for try := 1; ; try++ {
		if r.ID, err = memory.NewKeyID(); err != nil {
			return "", memory.Key{}, err
		}
		if c.opts.hookKeyID != nil {
			r.ID = c.opts.hookKeyID(r.ID)
		}
		kk, kv := c.paths.key(r.ID), encode(r)
		cmps := []clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(kk), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(hk), "=", 0),
		}
		var orElse []clientv3.Op
		if r.Workspace != "" {
			pk := c.paths.proj(ref)
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(pk), ">", 0))
			orElse = append(orElse, clientv3.OpGet(pk, clientv3.WithCountOnly()))
		}
		resp, err := c.cli.Txn(tctx).If(cmps...).
			Then(clientv3.OpPut(kk, kv), clientv3.OpPut(hk, strconv.FormatInt(r.ID, 10))).
			Else(append(orElse, clientv3.OpGet(hk, clientv3.WithCountOnly()))...).
			Commit()
		if err != nil {
			return "", memory.Key{}, etcdErr(ctx, what, err)
		}
		if resp.Succeeded {
			c.applyPuts(resp.Header.Revision, kk, kv)
			return token, r.key(), nil
		}
		if r.Workspace != "" && resp.Responses[0].GetResponseRange().Count == 0 {
			return "", memory.Key{}, memory.Errorf(memory.CodeNotFound, "project %s not found", ref)
		}
		if resp.Responses[len(resp.Responses)-1].GetResponseRange().Count != 0 {
			// Two equal 256-bit random tokens: the random source is broken.
			return "", memory.Key{}, memory.Internal(fmt.Errorf("%s: the new token's hash exists", what))
		}
		if try == memory.KeyIDTries {
			return "", memory.Key{}, memory.Internal(fmt.Errorf("%s: %d drawn key ids were all taken", what, memory.KeyIDTries))
		}
	}
}

// KeyByToken finds the live key of a token. Unknown and revoked keys get the
// same answer, so a caller learns nothing about which keys exist. A token
// the cache does not know costs one linearizable etcd Get (two if the key
// exists) before the answer, so a key made on another node a moment ago
// works here at once.
func (c *Control) KeyByToken(ctx context.Context, token string) (memory.Key, error) {
	unauthorized := memory.Errorf(memory.CodeUnauthorized, "unknown or revoked key")
	if token == "" {
		return memory.Key{}, unauthorized
	}
	hash := memory.HashToken(token)
	e, ok := c.cache.keyByHash(hash)
	if !ok {
		var err error
		if e, ok, err = c.missKeyByHash(ctx, hash); err != nil {
			return memory.Key{}, etcdErr(ctx, "look up key", err)
		}
		if !ok {
			return memory.Key{}, unauthorized
		}
	}
	if e.rec.RevokedAt != 0 {
		return memory.Key{}, unauthorized
	}
	k := e.rec.key()
	// last_used_at is written at most once a minute per key: by this node
	// (keyUse), and not at all while the record shows a recent use (by any node).
	now := time.Now().UTC()
	if now.UnixNano()-e.rec.LastUsedAt >= int64(memory.LastUsedEvery) && c.keyUse.Due(k.ID, now) && c.queueLastUsed(k.ID, now) {
		t := fromNanos(now.UnixNano())
		k.LastUsedAt = &t
	}
	return k, nil
}

// missKeyByHash looks a token hash up in etcd, and the key it names.
func (c *Control) missKeyByHash(ctx context.Context, hash string) (entry[keyRecord], bool, error) {
	resp, err := c.miss(ctx, c.paths.keyHash(hash))
	if err != nil || len(resp.Kvs) == 0 {
		return entry[keyRecord]{}, false, err
	}
	id, err := parseID(string(resp.Kvs[0].Value))
	if err != nil {
		return entry[keyRecord]{}, false, memory.Internal(errRecord(string(resp.Kvs[0].Key), err))
	}
	return c.missKey(ctx, id)
}

// missKey looks a key id up in etcd and caches what it finds.
func (c *Control) missKey(ctx context.Context, id int64) (entry[keyRecord], bool, error) {
	resp, err := c.miss(ctx, c.paths.key(id))
	if err != nil {
		return entry[keyRecord]{}, false, err
	}
	r, rev, err := firstKV[keyRecord](resp.Kvs)
	if err != nil || r == nil {
		return entry[keyRecord]{}, false, err
	}
	c.cache.put(resp.Kvs[0])
	return entry[keyRecord]{*r, rev}, true, nil
}

// KeyByID returns a key by id, revoked or not, or not_found. Web sessions
// hold a key id and look the key up on every request, so that a revoked key
// ends its sessions.
func (c *Control) KeyByID(ctx context.Context, id int64) (memory.Key, error) {
	notFound := memory.Errorf(memory.CodeNotFound, "key %d not found", id)
	if id < 1 || id > memory.KeyIDMax {
		return memory.Key{}, notFound
	}
	e, ok := c.cache.key(id)
	if !ok {
		var err error
		if e, ok, err = c.missKey(ctx, id); err != nil {
			return memory.Key{}, etcdErr(ctx, fmt.Sprintf("key %d", id), err)
		}
		if !ok {
			return memory.Key{}, notFound
		}
	}
	return e.rec.key(), nil
}

// ListKeys returns all keys, revoked ones included, oldest first (ids are
// random, so they say nothing of the order).
func (c *Control) ListKeys(ctx context.Context) ([]memory.Key, error) {
	return c.keys(func(keyRecord) bool { return true }), nil
}

// ListProjectKeys returns the keys of one project, revoked ones included,
// oldest first.
func (c *Control) ListProjectKeys(ctx context.Context, ref memory.ProjectRef) ([]memory.Key, error) {
	return c.keys(func(r keyRecord) bool { return inProject(r, ref) }), nil
}

// keys returns the cached keys that match, ordered by creation, then id.
func (c *Control) keys(match func(keyRecord) bool) []memory.Key {
	c.cache.mu.RLock()
	recs := make([]keyRecord, 0, len(c.cache.keys))
	for _, e := range c.cache.keys {
		if match(e.rec) {
			recs = append(recs, e.rec)
		}
	}
	c.cache.mu.RUnlock()
	slices.SortFunc(recs, func(a, b keyRecord) int {
		if a.CreatedAt != b.CreatedAt {
			return cmpInt(a.CreatedAt, b.CreatedAt)
		}
		return cmpInt(a.ID, b.ID)
	})
	out := make([]memory.Key, len(recs))
	for i, r := range recs {
		out[i] = r.key()
	}
	return out
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// KeyCounts counts a project's keys for the key limits: those created at or
// after since (revoked ones included) with the oldest of them, and the live
// ones.
func (c *Control) KeyCounts(ctx context.Context, ref memory.ProjectRef, since time.Time) (memory.KeyCounts, error) {
	var n memory.KeyCounts
	var oldest int64
	s := since.UnixNano()
	c.cache.mu.RLock()
	defer c.cache.mu.RUnlock()
	for _, e := range c.cache.keys {
		r := e.rec
		if !inProject(r, ref) {
			continue
		}
		if r.CreatedAt >= s {
			n.CreatedSince++
			if oldest == 0 || r.CreatedAt < oldest {
				oldest = r.CreatedAt
			}
		}
		if r.RevokedAt == 0 {
			n.Live++
		}
	}
	if oldest != 0 {
		n.OldestSince = fromNanos(oldest)
	}
	return n, nil
}

// RevokeKey revokes a key by id; revoking a revoked key again is a no-op,
// an unknown id is not_found. This node refuses the key as soon as RevokeKey
// returns; every other node once its watch delivers the change.
func (c *Control) RevokeKey(ctx context.Context, id int64) error {
	return c.revoke(ctx, id, func(keyRecord) bool { return true })
}

// RevokeProjectKey revokes key id only if it belongs to project ref; a key
// of any other project (or of none) is not_found, exactly as an unknown id,
// so a project admin learns nothing about other projects' keys.
func (c *Control) RevokeProjectKey(ctx context.Context, ref memory.ProjectRef, id int64) error {
	return c.revoke(ctx, id, func(r keyRecord) bool { return inProject(r, ref) })
}

// inProject reports whether key record r belongs to project ref. A
// server-admin key belongs to none, not even to the zero ref (as in the
// store, where its NULL project equals nothing).
func inProject(r keyRecord, ref memory.ProjectRef) bool {
	return r.Workspace != "" && r.Workspace == ref.Workspace && r.Project == ref.Project
}

// revoke sets revoked_at of key id if mine accepts its record.
func (c *Control) revoke(ctx context.Context, id int64, mine func(keyRecord) bool) error {
	notFound := memory.Errorf(memory.CodeNotFound, "key %d not found", id)
	if id < 1 || id > memory.KeyIDMax {
		return notFound
	}
	var guess *entry[keyRecord]
	if e, ok := c.cache.key(id); ok {
		guess = &e
	}
	now := time.Now().UnixNano()
	_, err := update(ctx, c, c.paths.key(id), guess, func(r *keyRecord) (bool, error) {
		if r == nil || !mine(*r) {
			return false, notFound
		}
		if r.RevokedAt != 0 {
			return false, nil
		}
		r.RevokedAt = now
		return true, nil
	})
	if err != nil {
		return etcdErr(ctx, fmt.Sprintf("revoke key %d", id), err)
	}
	return nil
}
