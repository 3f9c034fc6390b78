// Attaching to a background command over the daemon's WebSocket, against a
// real mayurad: output as it is printed, from an offset or only what is
// held, the gaps of a small ring, the end; and interactively, over the same
// connection, input, a terminal's size, signals, the input's end and stop.
// An abort, a timeout or a close ends the attachment, never the command.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { SandboxError, type NativeSandboxBackend, type StartOptions } from '../src/index.js';
import { reasonOf, run, sleep, suiteDaemon } from './daemon.js';

const decode = (chunks: Uint8Array[]) => new TextDecoder().decode(Buffer.concat(chunks));

// Waits until `seen` holds, a few seconds at most.
async function until(what: string, seen: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 250; ++i) {
    if (await seen()) return;
    await sleep(20);
  }
  assert.fail(`never: ${what}`);
}

// A command started and attached to interactively, its stdout gathered.
async function startAttached(s: NativeSandboxBackend, argv: string[], options: StartOptions = {}) {
  const command = await s.start(argv, options);
  const out: Uint8Array[] = [];
  const attachment = await s.attachInteractive(command.id, { onStdout: (d) => out.push(d) });
  return { command, attachment, out };
}

describe('attaching to a command over a WebSocket', () => {
  const suite = suiteDaemon({ maxLifetimeMs: 900_000 });

  it('gives the output as it is printed, and resolves with the ended command', async () => {
    const s = await suite.sandbox();
    // The command prints each line only once the test has seen the one
    // before: an attachment that gave output only at the end would see
    // nothing before its timeoutMs, and resolve with the command running.
    const c = await s.start([
      'sh',
      '-c',
      'echo one; until [ -e go1 ]; do sleep 0.05; done; echo two >&2; until [ -e go2 ]; do sleep 0.05; done; echo three; exit 4',
    ]);
    const pieces: Array<[string, string]> = [];
    const released: Promise<void>[] = [];
    const heard = (stream: string, d: Uint8Array) => {
      pieces.push([stream, new TextDecoder().decode(d)]);
      if (released.length < 2) released.push(s.writeFile(`go${released.length + 1}`, ''));
    };
    const info = await s.attach(c.id, {
      timeoutMs: 60_000,
      onStdout: (d) => heard('out', d),
      onStderr: (d) => heard('err', d),
    });
    await Promise.all(released);
    assert.equal(info.state, 'exited');
    assert.equal(info.exitCode, 4);
    assert.equal(info.stdoutBytes, 'one\nthree\n'.length);
    assert.deepEqual(pieces, [['out', 'one\n'], ['err', 'two\n'], ['out', 'three\n']]);
  });

  it('starts from an offset, and without follow gives only what is held', async () => {
    const s = await suite.sandbox();
    const c = await s.start(['sh', '-c', 'printf abcdef; printf XY >&2; sleep 1000']);
    await until('all printed', async () => {
      const now = await s.command(c.id);
      return now.stdoutBytes === 6 && now.stderrBytes === 2;
    });
    const out: Uint8Array[] = [];
    const err: Uint8Array[] = [];
    const info = await s.attach(c.id, {
      stdoutFrom: 3,
      stderrFrom: 1,
      follow: false,
      onStdout: (d) => out.push(d),
      onStderr: (d) => err.push(d),
    });
    assert.equal(info.state, 'running');
    assert.equal(decode(out), 'def');
    assert.equal(decode(err), 'Y');
    // An offset past the end: nothing yet, and without follow no wait for it.
    const none: Uint8Array[] = [];
    assert.equal((await s.attach(c.id, { stdoutFrom: 100, follow: false, onStdout: (d) => none.push(d) })).state, 'running');
    assert.equal(none.length, 0);
    assert.equal((await s.stop(c.id)).state, 'stopped');
  });

  it('reports the bytes a small ring dropped before they were reached', async () => {
    const s = await suite.sandbox();
    const c = await s.start(['sh', '-c', 'head -c 5000 /dev/zero | tr "\\0" a'], { keepBytes: 1024 });
    await until('ended', async () => (await s.command(c.id)).state === 'exited');
    const dropped: Array<[string, number]> = [];
    const out: Uint8Array[] = [];
    const info = await s.attach(c.id, { onDropped: (stream, bytes) => dropped.push([stream, bytes]), onStdout: (d) => out.push(d) });
    assert.equal(info.stdoutBytes, 5000);
    assert.deepEqual(dropped, [['stdout', 5000 - 1024]]);
    assert.equal(decode(out), 'a'.repeat(1024));
  });

  it('ends at timeoutMs with the command as it is then, still running', async () => {
    const s = await suite.sandbox();
    const c = await s.start(['sleep', '1000']);
    const info = await s.attach(c.id, { timeoutMs: 300 });
    // (ended by its timeoutMs: the command runs for a thousand seconds)
    assert.equal(info.state, 'running');
    assert.equal((await s.command(c.id)).state, 'running');
    assert.equal((await s.stop(c.id)).state, 'stopped');
  });

  it('an abort ends the attachment, cancelled, and leaves the command running', async () => {
    const s = await suite.sandbox();
    const c = await s.start(['sh', '-c', 'while :; do echo tick; sleep 0.1; done']);
    const abort = new AbortController();
    const out: Uint8Array[] = [];
    const attached = s.attach(c.id, { signal: abort.signal, onStdout: (d) => out.push(d) });
    await until('a tick', () => decode(out).includes('tick'));
    abort.abort();
    assert.equal(await reasonOf(attached), 'cancelled');
    const seen = out.length;
    await sleep(300);
    assert.equal(out.length, seen, 'nothing is given after the abort');
    assert.equal((await s.command(c.id)).state, 'running');
    // Aborted before it began: no connection at all.
    assert.equal(await reasonOf(s.attach(c.id, { signal: abort.signal })), 'cancelled');
    assert.equal((await s.stop(c.id)).state, 'stopped');
  });

  it('refuses an unknown command (not_found) or sandbox (gone) before the upgrade', async () => {
    const s = await suite.sandbox();
    assert.equal(await reasonOf(s.attach('c99')), 'not_found');
    assert.equal(await reasonOf(s.attachInteractive('c99')), 'not_found');
    assert.equal(await reasonOf(s.attach('C!')), 'invalid_input');
    const c = await s.start(['true']);
    assert.equal(await reasonOf(s.attach(c.id, { stdoutFrom: -1 })), 'invalid_input');
    await s.release();
    assert.equal(await reasonOf(s.attach(c.id)), 'gone');
  });

  it('drives a shell on a terminal: input echoed, a new size', async () => {
    const s = await suite.sandbox();
    const { attachment: a, out } = await startAttached(s, ['sh'], { terminal: { rows: 24, columns: 80 } });
    await a.write('echo hi-$((6 * 7))\n');
    // The terminal echoes what was typed, then the shell answers.
    await until('the answer', () => /echo hi-\$\(\(6 \* 7\)\)\r\n[^]*hi-42\r\n/.test(decode(out)));
    await a.write('stty size\n');
    await until('24 80', () => decode(out).includes('24 80\r\n'));
    await a.resize({ rows: 40, columns: 120 });
    await a.write(new TextEncoder().encode('stty size\n'));
    await until('40 120', () => decode(out).includes('40 120\r\n'));
    await a.write('exit 3\n');
    const info = await a.done;
    assert.equal(info.state, 'exited');
    assert.equal(info.exitCode, 3);
    assert.equal(await reasonOf(a.write('late\n')), 'invalid_input');
  });

  it('writes input, ends it, and refuses bad signals and sizes before sending them', async () => {
    const s = await suite.sandbox();
    const c = await s.start(['cat']);
    const out: Uint8Array[] = [];
    const refused: SandboxError[] = [];
    const a = await s.attachInteractive(c.id, { onStdout: (d) => out.push(d), onRefused: (e) => refused.push(e) });
    for (const bad of [0, 65, 1.5, NaN]) assert.equal(await reasonOf(a.signal(bad)), 'invalid_input', String(bad));
    for (const [rows, columns] of [[0, 80], [24, 1001], [24.5, 80]]) {
      assert.equal(await reasonOf(a.resize({ rows: rows ?? 0, columns: columns ?? 0 })), 'invalid_input');
    }
    await a.write('first ');
    await a.write(new TextEncoder().encode('second'));
    await until('the input echoed', () => decode(out) === 'first second');
    // A resize in bounds is the daemon's to refuse (no terminal): the
    // attachment goes on.
    await a.resize({ rows: 24, columns: 80 });
    await until('the refusal', () => refused.length > 0);
    assert.deepEqual(refused.map((e) => e.reason), ['invalid_input']);
    await a.write(' third');
    await a.closeInput();
    const info = await a.done;
    assert.equal(info.state, 'exited');
    assert.equal(info.exitCode, 0);
    assert.equal(decode(out), 'first second third');
  });

  it('signals the command, and paces or refuses input it does not read', async () => {
    const s = await suite.sandbox();
    const { attachment: a, out } = await startAttached(s, [
      'sh',
      '-c',
      'trap "echo got-usr1; exit 5" USR1; echo ready; while :; do sleep 0.05; done',
    ]);
    await until('ready', () => decode(out).includes('ready'));
    await a.signal(10);
    assert.equal((await a.done).exitCode, 5);
    assert.equal(decode(out), 'ready\ngot-usr1\n');

    // A write over a message's bound goes in pieces.
    const { attachment: w, out: counted } = await startAttached(s, ['wc', '-c']);
    await w.write(new Uint8Array(3 << 20));
    await w.closeInput();
    assert.equal((await w.done).exitCode, 0);
    assert.equal(decode(counted).trim(), String(3 << 20));

    // Writes not awaited, past 1 MiB unsent: limit_reached.
    const idle = await s.start(['sleep', '1000']);
    const i = await s.attachInteractive(idle.id);
    const first = i.write(new Uint8Array(1 << 20));
    assert.equal(await reasonOf(i.write(new Uint8Array(1 << 20))), 'limit_reached');
    await first;
    const closed = await i.close();
    assert.equal(closed.state, 'running');
    assert.equal(await reasonOf(i.signal(15)), 'invalid_input');
    assert.equal((await s.stop(idle.id)).state, 'stopped');
  });

  it('stops the command and everything it started over the attachment', async () => {
    const s = await suite.sandbox();
    const { attachment: a, out } = await startAttached(s, ['sh', '-c', 'sleep 1000 & setsid sleep 1000 & echo started; wait']);
    await until('started', () => decode(out).includes('started'));
    const stopped = await a.stop();
    assert.equal(stopped.state, 'stopped');
    assert.deepEqual(await a.done, stopped);
    assert.equal(await run(s, 'for p in /proc/[0-9]*; do cat $p/comm; done | grep -c sleep; true'), '0\n');
    assert.equal(await reasonOf(a.stop()), 'invalid_input');
  });
});
