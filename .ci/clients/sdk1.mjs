// The official TypeScript SDK v1 client (@modelcontextprotocol/sdk, protocol
// 2025-11-25, a session with its GET stream), driven line by line by
// clients_test.go (see repl.mjs). Usage: node sdk1.mjs URL KEY
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceListChangedNotificationSchema, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { fail, print, serve } from './repl.mjs';

const [url, key] = process.argv.slice(2);
const client = new Client({ name: 'munin-ci-sdk1', version: '1.0.0' });
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => print({ notification: n.method, params: n.params }));
client.setNotificationHandler(ResourceListChangedNotificationSchema, (n) => print({ notification: n.method, params: n.params ?? {} }));
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
} catch (e) {
  fail(e);
}
print({ connected: client.getServerVersion()?.name ?? '', capabilities: client.getServerCapabilities() ?? {} });

await serve({
  subscribe: ({ uri }) => client.subscribeResource({ uri }),
  unsubscribe: ({ uri }) => client.unsubscribeResource({ uri }),
  // listAll follows nextCursor to the end (at most maxPages pages) and
  // returns every uri in the order listed and the number of pages.
  listAll: async ({ maxPages = 100 }) => {
    const uris = [];
    let cursor;
    for (let pages = 1; pages <= maxPages; pages++) {
      const page = await client.listResources(cursor ? { cursor } : {});
      uris.push(...page.resources.map((r) => r.uri));
      cursor = page.nextCursor;
      if (!cursor) return { uris, pages };
    }
    throw new Error(`more than ${maxPages} pages`);
  },
  templates: () => client.listResourceTemplates(),
  read: ({ uri }) => client.readResource({ uri }),
}, () => client.close());
