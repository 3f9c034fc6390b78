// The seed's examples (shared/seed/sandboxes.md) on the native provider,
// against a real mayurad. The seed's createSandboxes(provider, options) is
// mayura/sandbox's, which is not on the registry and which this package does
// not provide; for this provider the same limits layer is mayurad's own (its
// create_sandboxes, held to the operator's maxSandboxes, maxLifetimeMs and
// network), which checks every create before anything is made. So each
// example's createSandboxes options are its daemon's settings, the provider
// is called as createSandboxes would call it, and every refusal below comes
// from the daemon, through the provider, with no stand-in between.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';

import { nativeSandboxes } from '../src/index.js';
import { metric, reasonOf, startDaemon, type Daemon } from './daemon.js';

// A daemon set up as the example's createSandboxes, for the length of `body`.
// (One at a time: the test's daemons share one id range.)
async function withDaemon(
  limits: { maxSandboxes: number; maxLifetimeMs: number; network?: string[] },
  body: (daemon: Daemon) => Promise<void>,
): Promise<void> {
  // The seed's default network is ['none'] (daemon.ts's is ['none', 'all']).
  const daemon = await startDaemon({ network: ['none'], ...limits });
  try {
    await body(daemon);
  } finally {
    await daemon.stop();
  }
}

// The body of `url` once it answers 200 (its server may still be starting).
async function fetchText(url: string): Promise<string> {
  let last = '';
  for (let i = 0; i < 100; ++i) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      const text = await res.text();
      if (res.status === 200) return text;
      last = `HTTP ${res.status}`;
    } catch (error) {
      last = String(error);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} never answered 200: ${last}`);
}

describe("the seed's examples", () => {
  it('index.js prints 42', async () => {
    await withDaemon({ maxSandboxes: 4, maxLifetimeMs: 30 * 60_000 }, async (daemon) => {
      const sandboxes = nativeSandboxes({ socket: daemon.socket });
      const sandbox = await sandboxes.create({ lifetimeMs: 10 * 60_000 });
      try {
        await sandbox.writeFile('index.js', 'console.log(6 * 7)');
        const result = await sandbox.exec(['node', 'index.js']);
        assert.equal(result.exitCode, 0);
        assert.equal(result.stdout, '42\n');
      } finally {
        await sandbox.release();
      }
      // The daemon's maxLifetimeMs holds (the provider's own bound is 24 hours).
      assert.ok(sandboxes.maxLifetimeMs > 31 * 60_000);
      assert.equal(await reasonOf(sandboxes.create({ lifetimeMs: 31 * 60_000 })), 'invalid_input');
      assert.equal(await metric(daemon, 'mayura_creates_total'), 1);
    });
  });

  it("npm test's shape: cwd, env, timeout, exit code and stderr", async () => {
    await withDaemon({ maxSandboxes: 1, maxLifetimeMs: 600_000 }, async (daemon) => {
      const sandboxes = nativeSandboxes({ socket: daemon.socket });
      const sandbox = await sandboxes.create({ lifetimeMs: 600_000, env: { NODE_ENV: 'test' } });
      try {
        // The daemon's maxSandboxes: 1 holds while this one lives.
        assert.equal(await reasonOf(sandboxes.create({ lifetimeMs: 600_000 })), 'limit_reached');
        await sandbox.writeFile(
          'app/package.json',
          JSON.stringify({ name: 'app', version: '1.0.0', scripts: { test: 'node -e "console.error(process.env.NODE_ENV); process.exit(1)"' } }),
        );
        const tests = await sandbox.exec(['npm', 'test'], { cwd: 'app', timeoutMs: 120_000 });
        assert.equal(tests.timedOut, false);
        assert.equal(tests.exitCode, 1, tests.stderr);
        assert.match(tests.stderr, /^test$/m);
      } finally {
        await sandbox.release();
      }
    });
  });

  it('the network example: a published port whose url answers from the sandbox', { timeout: 120_000 }, async () => {
    await withDaemon({ maxSandboxes: 2, maxLifetimeMs: 600_000, network: ['none', 'all'] }, async (daemon) => {
      const sandboxes = nativeSandboxes({ socket: daemon.socket });
      const server = await sandboxes.create({ lifetimeMs: 600_000, network: 'all', ports: [3000] });
      try {
        // What only this sandbox's server can answer: a file written into it.
        const nonce = `served from the sandbox ${randomBytes(16).toString('hex')}\n`;
        await server.writeFile('index.html', nonce);
        // (python3 serves the workdir as `npx serve` does in the seed: npm's registry is not reached here)
        await server.exec(['sh', '-c', 'setsid nohup python3 -m http.server 3000 >/dev/null 2>&1 < /dev/null &']);
        const url = await server.url(3000);
        assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
        assert.equal(await fetchText(`${url}/index.html`), nonce);
      } finally {
        await server.release();
      }
    });
    // A kind not listed where the sandboxes are set up is refused: by the
    // daemon, whose network is ['none'], though the provider can enforce 'all'.
    await withDaemon({ maxSandboxes: 1, maxLifetimeMs: 600_000 }, async (daemon) => {
      const offline = nativeSandboxes({ socket: daemon.socket });
      assert.ok(offline.features.network.includes('all'));
      assert.equal(await reasonOf(offline.create({ lifetimeMs: 600_000, network: 'all' })), 'permission_denied');
      assert.equal(await metric(daemon, 'mayura_creates_total'), 0);
      assert.equal(await metric(daemon, 'mayura_sandboxes_alive'), 0);
      // (the control: the default network is made, and counted)
      const s = await offline.create({ lifetimeMs: 600_000 });
      try {
        assert.equal(await metric(daemon, 'mayura_creates_total'), 1);
        assert.equal(await metric(daemon, 'mayura_sandboxes_alive'), 1);
      } finally {
        await s.release();
      }
    });
  });
});
