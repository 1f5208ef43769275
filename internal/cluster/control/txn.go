package control

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"munin/internal/memory"
)

// casTries bounds the compare-and-swap rounds of one update. A round only
// fails when another node changed the same record in between (a budget, a
// revocation, last_used_at), so more than a few is pathological.
const casTries = 16

// update changes the record at key in a compare-and-swap loop and, once etcd
// took the change, applies it to the cache, so this node reads it at once.
// The first round starts from the cached record (guess, nil: read it), each
// failed compare returns the current record for the next round. change gets
// nil for a missing record; it edits the record in place and says whether to
// write it, or returns the caller's error (not_found, …). update returns the
// revision of the write, 0 if change wrote nothing.
func update[T any](ctx context.Context, c *Control, key string, guess *entry[T], change func(cur *T) (bool, error)) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	var cur *T
	var rev int64
	if guess != nil {
		v := guess.rec
		cur, rev = &v, guess.rev
	} else {
		resp, err := c.cli.Get(ctx, key)
		if err != nil {
			return 0, err
		}
		if cur, rev, err = firstKV[T](resp.Kvs); err != nil {
			return 0, err
		}
	}
	for range casTries {
		write, err := change(cur)
		if err != nil || !write {
			return 0, err
		}
		val := encode(*cur)
		resp, err := c.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpPut(key, val)).
			Else(clientv3.OpGet(key)).
			Commit()
		if err != nil {
			return 0, err
		}
		if resp.Succeeded {
			c.cache.put(&mvccpb.KeyValue{Key: []byte(key), Value: []byte(val), ModRevision: resp.Header.Revision})
			return resp.Header.Revision, nil
		}
		if cur, rev, err = firstKV[T](resp.Responses[0].GetResponseRange().Kvs); err != nil {
			return 0, err
		}
	}
	return 0, memory.Internal(fmt.Errorf("update %s: still contended after %d rounds", key, casTries))
}

// firstKV decodes the first of kvs (nil, 0 if there is none).
func firstKV[T any](kvs []*mvccpb.KeyValue) (*T, int64, error) {
	if len(kvs) == 0 {
		return nil, 0, nil
	}
	v, err := decode[T](kvs[0].Value)
	if err != nil {
		return nil, 0, memory.Internal(errRecord(string(kvs[0].Key), err))
	}
	return &v, kvs[0].ModRevision, nil
}

// applyPuts puts the values a successful transaction wrote into the cache
// at the transaction's revision.
func (c *Control) applyPuts(rev int64, kv ...string) {
	for i := 0; i+1 < len(kv); i += 2 {
		c.cache.put(&mvccpb.KeyValue{Key: []byte(kv[i]), Value: []byte(kv[i+1]), ModRevision: rev})
	}
}
