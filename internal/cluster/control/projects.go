package control

import (
	"context"
	"fmt"
	"slices"
	"strconv"
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
	if p, ok := c.cache.project(ref); ok {
		return p, nil
	}
	// The project and its budgets, read together.
	resp, err := c.missTxn(ctx, clientv3.OpGet(c.paths.proj(ref)), clientv3.OpGet(c.paths.budgets(ref), clientv3.WithPrefix()))
	if err != nil {
		return memory.ProjectInfo{}, etcdErr(ctx, fmt.Sprintf("project %s", ref), err)
	}
	proj, budgets := resp.Responses[0].GetResponseRange().Kvs, resp.Responses[1].GetResponseRange().Kvs
	r, _, err := firstKV[projRecord](proj)
	if err != nil {
		return memory.ProjectInfo{}, err
	}
	if r == nil {
		return memory.ProjectInfo{}, memory.Errorf(memory.CodeNotFound, "project %s not found", ref)
	}
	for _, kv := range append(proj, budgets...) {
		c.cache.put(kv)
	}
	p, _ := c.cache.project(ref)
	return p, nil
}

// ListProjects returns every project of every workspace, ordered by
// workspace, then project (from the cache).
func (c *Control) ListProjects(ctx context.Context) ([]memory.ProjectInfo, error) {
	out := c.cache.allProjects()
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
	return c.setBudget(ctx, ref, budgetWrites, perHour, "set write budget")
}

// SetWriteBudgetBytes sets a project's content bytes per hour (0: the server default).
func (c *Control) SetWriteBudgetBytes(ctx context.Context, ref memory.ProjectRef, perHour int) error {
	if err := ref.Validate(); err != nil {
		return err
	}
	if perHour < 0 {
		return memory.Errorf(memory.CodeInvalid, "write budget of %d bytes must not be negative", perHour)
	}
	return c.setBudget(ctx, ref, budgetBytes, perHour, "set write budget bytes")
}

// setBudget puts one budget of a project, if the project exists: a plain
// put, so the last of concurrent changes wins, as with SQL's UPDATE.
func (c *Control) setBudget(ctx context.Context, ref memory.ProjectRef, field string, perHour int, what string) error {
	bk, bv := c.paths.budgets(ref)+field, strconv.Itoa(perHour)
	tctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	resp, err := c.cli.Txn(tctx).
		If(clientv3.Compare(clientv3.CreateRevision(c.paths.proj(ref)), ">", 0)).
		Then(clientv3.OpPut(bk, bv)).
		Commit()
	if err != nil {
		return etcdErr(ctx, fmt.Sprintf("%s of %s", what, ref), err)
	}
	if !resp.Succeeded {
		return memory.Errorf(memory.CodeNotFound, "project %s not found", ref)
	}
	c.applyPuts(resp.Header.Revision, bk, bv)
	return nil
}
