// The seed's examples on the native provider, transliterated only as far as
// a test needs: createSandboxes comes from the test-only stand-in of the
// limits layer, and the provider is ours instead of dockerSandboxes.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { nativeSandboxes } from '../src/index.js';
import { startDaemon, type Daemon } from './daemon.js';
import { createSandboxes } from './sandboxes.js';

describe("the seed's examples", () => {
  let daemon: Daemon;
  before(async () => {
    daemon = await startDaemon();
  });
  after(async () => {
    await daemon.stop();
  });

  it('index.js prints 42', async () => {
    const sandboxes = createSandboxes(nativeSandboxes({ socket: daemon.socket }), {
      maxSandboxes: 4,
      maxLifetimeMs: 30 * 60_000,
    });
    const sandbox = await sandboxes.create({ lifetimeMs: 10 * 60_000 });
    try {
      await sandbox.writeFile('index.js', 'console.log(6 * 7)');
      const result = await sandbox.exec(['node', 'index.js']);
      assert.equal(result.exitCode, 0);
      assert.equal(result.stdout, '42\n');
    } finally {
      await sandbox.release();
    }
    await sandboxes.close();
  });

  it("npm test's shape: cwd, env, timeout, exit code and stderr", async () => {
    const sandboxes = createSandboxes(nativeSandboxes({ socket: daemon.socket }), { maxSandboxes: 1, maxLifetimeMs: 600_000 });
    const sandbox = await sandboxes.create({ lifetimeMs: 600_000, env: { NODE_ENV: 'test' } });
    await sandbox.writeFile(
      'app/package.json',
      JSON.stringify({ name: 'app', version: '1.0.0', scripts: { test: 'node -e "console.error(process.env.NODE_ENV); process.exit(1)"' } }),
    );
    const tests = await sandbox.exec(['npm', 'test'], { cwd: 'app', timeoutMs: 120_000 });
    assert.equal(tests.timedOut, false);
    assert.notEqual(tests.exitCode, 0);
    assert.match(tests.stderr, /^test$/m);
    await sandbox.release();
    await sandboxes.close();
  });

  it('the network example: ports and url', async () => {
    const sandboxes = createSandboxes(nativeSandboxes({ socket: daemon.socket }), {
      maxSandboxes: 2,
      maxLifetimeMs: 600_000,
      network: ['none', 'all'],
    });
    const server = await sandboxes.create({ lifetimeMs: 600_000, network: 'all', ports: [3000] });
    await server.exec(['sh', '-c', 'setsid nohup python3 -m http.server 3000 >/dev/null 2>&1 < /dev/null &']);
    assert.match(await server.url(3000), /^http:\/\/127\.0\.0\.1:\d+$/);
    // A kind not listed where the sandboxes are set up is refused.
    const offline = createSandboxes(nativeSandboxes({ socket: daemon.socket }), { maxSandboxes: 1, maxLifetimeMs: 600_000 });
    await assert.rejects(offline.create({ lifetimeMs: 600_000, network: 'all' }), { reason: 'permission_denied' });
    await sandboxes.close();
  });
});
