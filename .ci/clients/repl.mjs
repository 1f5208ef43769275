// The line protocol between clients_test.go and the client scripts: one
// JSON object per line each way. The test writes {id, op, ...} on stdin;
// the script answers {id, ok} or {id, error: {code, message, data}} and
// prints every notification the server sends as {notification, params}.
// Closing stdin closes the client and ends the script.
import { createInterface } from 'node:readline';

// hardLimitMs ends a script the test forgot (or that outlived a killed
// test), so no Node process stays behind.
const hardLimitMs = 180_000;

export function print(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

export function errorOf(e) {
  return { code: e?.code ?? null, message: String(e?.message ?? e), data: e?.data ?? null };
}

// serve runs ops[msg.op](msg) for every line on stdin, one at a time and in
// order, and calls close when stdin ends.
export async function serve(ops, close) {
  setTimeout(() => { print({ fatal: 'hard time limit reached' }); process.exit(3); }, hardLimitMs).unref();
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (!line.trim()) continue;
    let msg;
    try {
      msg = JSON.parse(line);
    } catch (e) {
      print({ fatal: `bad command line: ${line}` });
      continue;
    }
    const op = ops[msg.op];
    if (!op) {
      print({ id: msg.id, error: { code: null, message: `unknown op ${msg.op}` } });
      continue;
    }
    try {
      print({ id: msg.id, ok: (await op(msg)) ?? {} });
    } catch (e) {
      print({ id: msg.id, error: errorOf(e) });
    }
  }
  try { await close(); } catch { /* the process ends anyway */ }
  process.exit(0);
}

// fail prints why the script could not start and ends it.
export function fail(e) {
  print({ fatal: String(e?.stack ?? e) });
  process.exit(2);
}
