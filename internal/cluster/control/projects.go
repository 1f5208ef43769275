package control

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"munin/internal/memory"
)

// EnsureProject creates the workspace and the project if they are new and
// reports whether this call created the project. One transaction decides,
// so of any number of concurrent calls on any nodes exactly one creates it.
// It writes control data only: the workspace's file is its owner's business.
func (c *Control) EnsureProject(ctx context.Context, ref memory.ProjectRef) (bool, error) {
	if err := ref.Validate(); err != nil {
		return false, err
	}
	if _, ok := c.cache.project(ref); ok {
		return false, nil // projects are never deleted: known is final
	}
	now := time.Now().UnixNano()
	pk, wk := c.paths.proj(ref), c.paths.ws(ref.Workspace)
	pv, wv := encode(projRecord{CreatedAt: now}), encode(wsRecord{CreatedAt: now})
	tctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	resp, err := c.cli.Txn(tctx).
		If(clientv3.Compare(clientv3.CreateRevision(pk), "=", 0)).
		Then(clientv3.OpPut(pk, pv), clientv3.OpTxn(
			[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(wk), "=", 0)},
			[]clientv3.Op{clientv3.OpPut(wk, wv)}, nil)).
		Commit()
	if err != nil {
		return false, etcdErr(ctx, fmt.Sprintf("ensure project %s", ref), err)
	}
	if !resp.Succeeded {
		return false, nil
	}
	c.applyPuts(resp.Header.Revision, pk, pv)
	if resp.Responses[1].GetResponseTxn().Succeeded {
		c.applyPuts(resp.Header.Revision, wk, wv)
	}
	return true, nil
}

// Project returns one project, or not_found. A project missing from the
// cache is looked up in etcd once (it may have been created on another node
// a moment ago).
func (c *Control) Project(ctx context.Context, ref memory.ProjectRef) (memory.ProjectInfo, error) {
	if err := ref.Validate(); err != nil {
		return memory.ProjectInfo{}, err
	}
	if e, ok := c.cache.project(ref); ok {
		return e.rec.info(ref), nil
	}
	resp, err := c.miss(ctx, c.paths.proj(ref))
	if err != nil {
		return memory.ProjectInfo{}, etcdErr(ctx, fmt.Sprintf("project %s", ref), err)
	}
	r, _, err := firstKV[projRecord](resp.Kvs)
	if err != nil {
		return memory.ProjectInfo{}, err
	}
	if r == nil {
		return memory.ProjectInfo{}, memory.Errorf(memory.CodeNotFound, "project %s not found", ref)
	}
	c.cache.put(resp.Kvs[0])
	return r.info(ref), nil
}

// ListProjects returns every project of every workspace, ordered by
// workspace, then project (from the cache).
func (c *Control) ListProjects(ctx context.Context) ([]memory.ProjectInfo, error) {
	c.cache.mu.RLock()
	out := make([]memory.ProjectInfo, 0, len(c.cache.projects))
	for ref, e := range c.cache.projects {
		out = append(out, e.rec.info(ref))
	}
	c.cache.mu.RUnlock()
	slices.SortFunc(out, func(a, b memory.ProjectInfo) int {
		if n := strings.Compare(a.Ref.Workspace, b.Ref.Workspace); n != 0 {
			return n
		}
		return strings.Compare(a.Ref.Project, b.Ref.Project)
	})
	return out, nil
}

// Workspaces returns the names of all workspaces, sorted (from the cache);
// placement spreads them over the nodes.
func (c *Control) Workspaces() []string {
	c.cache.mu.RLock()
	out := make([]string, 0, len(c.cache.workspaces))
	for name := range c.cache.workspaces {
		out = append(out, name)
	}
	c.cache.mu.RUnlock()
	slices.Sort(out)
	return out
}

// SetWriteBudget sets a project's writes per hour (0: the server default).
func (c *Control) SetWriteBudget(ctx context.Context, ref memory.ProjectRef, perHour int) error {
	if err := ref.Validate(); err != nil {
		return err
	}
	if perHour < 0 {
		return memory.Errorf(memory.CodeInvalid, "write budget %d must not be negative", perHour)
	}
	return c.setBudget(ctx, ref, "set write budget", func(r *projRecord) { r.WriteBudget = perHour })
}

// SetWriteBudgetBytes sets a project's content bytes per hour (0: the server default).
func (c *Control) SetWriteBudgetBytes(ctx context.Context, ref memory.ProjectRef, perHour int) error {
	if err := ref.Validate(); err != nil {
		return err
	}
	if perHour < 0 {
		return memory.Errorf(memory.CodeInvalid, "write budget of %d bytes must not be negative", perHour)
	}
	return c.setBudget(ctx, ref, "set write budget bytes", func(r *projRecord) { r.WriteBudgetBytes = perHour })
}

// setBudget changes one budget field of a project record in etcd.
func (c *Control) setBudget(ctx context.Context, ref memory.ProjectRef, what string, set func(*projRecord)) error {
	var guess *entry[projRecord]
	if e, ok := c.cache.project(ref); ok {
		guess = &e
	}
	_, err := update(ctx, c, c.paths.proj(ref), guess, func(r *projRecord) (bool, error) {
		if r == nil {
			return false, memory.Errorf(memory.CodeNotFound, "project %s not found", ref)
		}
		set(r)
		return true, nil
	})
	if err != nil {
		return etcdErr(ctx, fmt.Sprintf("%s of %s", what, ref), err)
	}
	return nil
}
