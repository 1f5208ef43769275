// The official TypeScript SDK v2 client (@modelcontextprotocol/client)
// pinned to protocol 2026-07-28 (no sessions; subscriptions/listen),
// driven line by line by clients_test.go (see repl.mjs).
// Usage: node sdk2.mjs URL KEY
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { fail, print, serve } from './repl.mjs';

const [url, key] = process.argv.slice(2);
const client = new Client({ name: 'munin-ci-sdk2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
for (const method of ['notifications/resources/updated', 'notifications/resources/list_changed']) {
  client.setNotificationHandler(method, (n) => print({ notification: n.method, params: n.params ?? {} }));
}
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
} catch (e) {
  fail(e);
}
print({ connected: client.getServerVersion()?.name ?? '', capabilities: client.getServerCapabilities() ?? {} });

// The open subscriptions by the name the test gave them.
const subs = new Map();
await serve({
  listen: async ({ name, filter }) => {
    const sub = await client.listen(filter);
    subs.set(name, sub);
    sub.closed.then((how) => print({ closed: name, how }));
    return { honoredFilter: sub.honoredFilter };
  },
  // close ends a subscription from this side and answers how it ended.
  close: async ({ name }) => {
    const sub = subs.get(name);
    if (!sub) throw new Error(`no subscription ${name}`);
    await sub.close();
    return { how: await sub.closed };
  },
  read: ({ uri }) => client.readResource({ uri }),
}, async () => {
  for (const sub of subs.values()) await sub.close();
  await client.close();
});
