// The contract through @mayurajs/sandbox-native against a real mayurad: what
// the C++ conformance suite checks, in TypeScript. Each test's sandbox is
// released by it; the daemon, stopped at the end, must have left nothing.

import assert from 'node:assert/strict';
import * as http from 'node:http';
import { after, before, describe, it } from 'node:test';

import { nativeSandboxes, type SandboxBackend } from '../src/index.js';
import { reasonOf, startDaemon, suiteDaemon, type Daemon } from './daemon.js';

const count = (pattern: string) =>
  `n=0; for c in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $c 2>/dev/null | grep -q '^${pattern}' && n=$((n+1)); done; echo $n`;

describe('the contract through mayurad', () => {
  const suite = suiteDaemon();

  it('says what it is', () => {
    assert.equal(suite.provider.workdir, '/workspace');
    assert.equal(suite.provider.features.stdin, true);
    assert.deepEqual(suite.provider.features.network, ['none', 'all', 'allow']);
    assert.ok(suite.provider.maxLifetimeMs > 0);
  });

  it('runs commands: exit codes, output, env, cwd, stdin', async () => {
    const s = await suite.sandbox();
    const r = await s.exec(['sh', '-c', 'echo out; echo err >&2; exit 3']);
    assert.equal(r.exitCode, 3);
    assert.equal(r.stdout, 'out\n');
    assert.equal(r.stderr, 'err\n');
    assert.equal(r.timedOut, false);
    assert.equal(r.truncated, false);
    // durationMs is the command's: a 0.3 s sleep takes 300 ms at least (and not ten times that)
    const slept = await s.exec(['sleep', '0.3']);
    assert.ok(Number.isInteger(slept.durationMs) && slept.durationMs >= 300 && slept.durationMs < 3000, String(slept.durationMs));
    assert.equal((await s.exec(['sh', '-c', 'echo $GREETING'], { env: { GREETING: 'hi there' } })).stdout, 'hi there\n');
    await s.exec(['mkdir', '-p', 'sub/dir']);
    assert.equal((await s.exec(['pwd'], { cwd: 'sub/dir' })).stdout, '/workspace/sub/dir\n');
    assert.equal((await s.exec(['pwd'])).stdout, '/workspace\n');
    assert.equal((await s.exec(['cat'], { stdin: 'from stdin' })).stdout, 'from stdin');
    assert.equal((await s.exec(['wc', '-c'], { stdin: new Uint8Array([0, 255, 1]) })).stdout.trim(), '3');
    // a program that is not there is the command's exit code 127, not a failure of the call
    const missing = await s.exec(['/no/such/program']);
    assert.equal(missing.exitCode, 127);
    assert.equal(missing.timedOut, false);
    assert.equal((await s.exec(['sh', '-c', 'exit 0'])).exitCode, 0);
  });

  // What the stop tests' zero rests on: the counter counts processes that run.
  it('counts the processes a command started', async () => {
    const s = await suite.sandbox();
    const r = await s.exec(['sh', '-c', `sleep 320 & sleep 321 & ${count('sleep 32')}`]);
    assert.equal(r.stdout, '2\n');
  });

  // Polls the count of `pattern` in `s` until it is `n` (or 10 s pass): the last count.
  const countUntil = async (s: SandboxBackend, pattern: string, n: string) => {
    let seen = '';
    for (let i = 0; i < 200 && seen !== n; ++i) {
      if (i > 0) await new Promise((r) => setTimeout(r, 50));
      seen = (await s.exec(['sh', '-c', count(pattern)])).stdout;
    }
    return seen;
  };

  // (a command that was not stopped would hold the test past its own bound)
  it('stops a command at its timeout, with everything it started', { timeout: 60_000 }, async () => {
    const s = await suite.sandbox();
    const running = s.exec(['sh', '-c', 'sleep 300 & sleep 301 & sleep 302'], { timeoutMs: 5000 });
    assert.equal(await countUntil(s, 'sleep 30', '3\n'), '3\n');  // all three ran before the timeout
    const r = await running;
    assert.equal(r.timedOut, true);
    assert.equal(r.exitCode, null);
    assert.equal((await s.exec(['sh', '-c', count('sleep 30')])).stdout, '0\n');
  });

  it('cancels a command with its signal: cancelled, and everything it started is stopped', async () => {
    const s = await suite.sandbox();
    const controller = new AbortController();
    const running = s.exec(['sh', '-c', 'sleep 310 & sleep 311 & echo started; wait'], { signal: controller.signal });
    // started once both are there
    assert.equal(await countUntil(s, 'sleep 31', '2\n'), '2\n');
    controller.abort();
    assert.equal(await reasonOf(running), 'cancelled');
    assert.equal(await countUntil(s, 'sleep 31', '0\n'), '0\n');
    const aborted = new AbortController();
    aborted.abort();
    assert.equal(await reasonOf(s.exec(['true'], { signal: aborted.signal })), 'cancelled');
  });

  it('reads and writes files binary-safe, lists and removes them', async () => {
    const s = await suite.sandbox();
    const bytes = new Uint8Array(256);
    for (let i = 0; i < 256; ++i) bytes[i] = i;
    await s.writeFile('dir/all.bin', bytes);
    assert.deepEqual(Buffer.from(await s.readFile('dir/all.bin')), Buffer.from(bytes));
    await s.writeFile('/workspace/text.txt', 'héllo\n');
    assert.equal(new TextDecoder().decode(await s.readFile('text.txt')), 'héllo\n');
    assert.equal((await s.exec(['cat', 'text.txt'])).stdout, 'héllo\n');
    const entries = await s.list('.');
    const names = entries.map((e) => `${e.name}:${e.type}`).sort();
    assert.deepEqual(names, ['dir:directory', 'text.txt:file']);
    assert.equal((await s.list('dir'))[0]?.size, 256);
    await s.remove('dir/all.bin');
    assert.equal(await reasonOf(s.readFile('dir/all.bin')), 'not_found');
    assert.equal(await reasonOf(s.readFile('missing')), 'not_found');
    assert.equal(await reasonOf(s.remove('missing')), 'not_found');
    // empty, large, and many at once
    await s.writeFile('empty', new Uint8Array(0));
    assert.equal((await s.readFile('empty')).length, 0);
    const large = Buffer.alloc(8 << 20, 'ab');
    await s.writeFile('large.bin', large);
    assert.ok(Buffer.from(await s.readFile('large.bin')).equals(large));
    await Promise.all(Array.from({ length: 16 }, (_, i) => s.writeFile(`many/${i}`, String(i))));
    const back = await Promise.all(Array.from({ length: 16 }, (_, i) => s.readFile(`many/${i}`)));
    assert.deepEqual(back.map((b) => new TextDecoder().decode(b)), Array.from({ length: 16 }, (_, i) => String(i)));
    assert.equal((await s.list('many')).length, 16);
  });

  it('returns large output whole, and runs commands at once', async () => {
    const s = await suite.sandbox();
    const r = await s.exec(['sh', '-c', "head -c 300000 /dev/zero | tr '\\0' a"]);
    assert.equal(r.stdout.length, 300000);
    assert.equal(r.truncated, false);
    const many = await Promise.all(Array.from({ length: 8 }, (_, i) => s.exec(['sh', '-c', `sleep 0.2; echo ${i}`])));
    assert.deepEqual(many.map((m) => m.stdout), Array.from({ length: 8 }, (_, i) => `${i}\n`));
  });

  it('refuses bad paths before anything is done, and no path leaves the sandbox', async () => {
    const s = await suite.sandbox();
    for (const bad of ['', 'a\0b', `${'x'.repeat(256)}/f`]) {
      assert.equal(await reasonOf(s.readFile(bad)), 'invalid_input', `read ${JSON.stringify(bad.slice(0, 8))}`);
      assert.equal(await reasonOf(s.writeFile(bad, 'x')), 'invalid_input', 'write');
      assert.equal(await reasonOf(s.list(bad)), 'invalid_input', 'list');
      assert.equal(await reasonOf(s.remove(bad)), 'invalid_input', 'remove');
    }
    assert.equal(await reasonOf(s.exec([])), 'invalid_input', 'exec');
    assert.equal(await reasonOf(s.exec(['true'], { env: { 'NOT-A-NAME': 'x' } })), 'invalid_input', 'env');
    assert.equal(await reasonOf(suite.provider.create({ lifetimeMs: 0 })), 'invalid_input', 'lifetime 0');
    assert.equal(await reasonOf(suite.provider.create({ lifetimeMs: 10 * 24 * 3600_000 })), 'invalid_input', 'lifetime');
    // Up past the workdir is the sandbox's own root: its hostname, not the host's.
    const hostname = new TextDecoder().decode(await s.readFile('../../etc/hostname'));
    assert.match(hostname, /^mayura-[0-9a-f]{8}\n$/);
    await s.exec(['ln', '-s', '/', 'up']);
    assert.equal(new TextDecoder().decode(await s.readFile('up/etc/hostname')), hostname);
  });

  it('is gone after release, and after its lifetime', async () => {
    const s = await suite.provider.create({ lifetimeMs: 120_000 });
    await s.release();
    assert.equal(await reasonOf(s.exec(['true'])), 'gone');
    assert.equal(await reasonOf(s.readFile('x')), 'gone');
    await s.release();  // twice is fine

    const short = await suite.sandbox(1500);
    assert.equal((await short.exec(['echo', 'alive'])).stdout, 'alive\n');
    await new Promise((r) => setTimeout(r, 2500));
    assert.equal(await reasonOf(short.exec(['true'])), 'gone');
  });

  it('fails gone for a command running when the lifetime ends', async () => {
    const s = await suite.sandbox(2000);
    assert.equal(await reasonOf(s.exec(['sleep', '100'])), 'gone');
  });
});

describe('a published port', () => {
  let daemon: Daemon;
  before(async () => {
    daemon = await startDaemon();
  });
  after(async () => {
    await daemon.stop();
  });

  it('has a url the host reaches', async () => {
    const provider = nativeSandboxes({ socket: daemon.socket });
    const s = await provider.create({ lifetimeMs: 120_000, network: 'all', ports: [8000] });
    try {
      await s.writeFile('index.html', 'served from the sandbox\n');
      await s.exec(['sh', '-c', 'setsid nohup python3 -m http.server 8000 >/dev/null 2>&1 < /dev/null &']);
      const url = await s.url(8000);
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
      let body = '';
      for (let i = 0; i < 100 && body === ''; ++i) {
        body = await new Promise<string>((resolve) => {
          http
            .get(`${url}/index.html`, (res) => {
              let text = '';
              res.on('data', (d: Buffer) => (text += d.toString()));
              res.on('end', () => resolve(res.statusCode === 200 ? text : ''));
            })
            .on('error', () => resolve(''));
        });
        if (body === '') await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(body, 'served from the sandbox\n');
      assert.equal(await reasonOf(s.url(9999)), 'invalid_input');
    } finally {
      await s.release();
    }
  });
});
