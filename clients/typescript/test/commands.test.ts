// Background commands through @mayurajs/sandbox-native against a real
// mayurad: a command started in one call is held by the daemon, and later
// calls (as an agent's later steps) read its log, type into it, signal it
// and stop it with all it started. Also exec's streamed output, the
// keep-alive pool, and features and the longest lifetime as the daemon says
// them.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { connectNativeSandboxes, type CommandInfo } from '../src/index.js';
import { metric, reasonOf, run, sleep, suiteDaemon } from './daemon.js';

const decode = (chunks: Uint8Array[]) => new TextDecoder().decode(Buffer.concat(chunks));

describe('background commands through mayurad', () => {
  const suite = suiteDaemon({ maxLifetimeMs: 900_000 });

  it('are held by the daemon, and read, written to and signalled in later calls', async () => {
    const s = await suite.sandbox();
    const started = await s.start(['sh', '-c', 'echo up; while read l; do echo got-$l; done; echo bye >&2; exit 3'], {
      keepBytes: 4096,
    });
    assert.equal(started.state, 'running');
    assert.match(started.id, /^c[0-9]+$/);

    const listed = await s.commands();
    assert.deepEqual(listed.map((c) => c.id), [started.id]);
    assert.deepEqual(listed[0]?.argv.slice(0, 2), ['sh', '-c']);

    await s.writeInput(started.id, 'one\n');
    const seen: Uint8Array[] = [];
    let follow = 0;
    for (let i = 0; i < 300 && !decode(seen).includes('got-one'); ++i) {
      const slice = await s.output(started.id, { from: follow });
      assert.equal(slice.dropped, 0);
      seen.push(slice.data);
      follow = slice.next;
      await sleep(20);
    }
    assert.equal(decode(seen), 'up\ngot-one\n');
    await s.writeInput(started.id, 'two\n');
    await s.closeInput(started.id);
    const ended = await s.wait(started.id, { timeoutMs: 30_000 });
    assert.equal(ended.state, 'exited');
    assert.equal(ended.exitCode, 3);
    assert.equal(decode([(await s.output(started.id)).data]), 'up\ngot-one\ngot-two\n');
    assert.equal(decode([(await s.output(started.id, { stream: 'stderr' })).data]), 'bye\n');

    // A signal reaches the command's trap. (Not while the shell waits in a
    // read: a shell may run a trap only once the read returns.)
    const trapped = await s.start(['sh', '-c', 'trap "echo got-usr1; exit 5" USR1; echo ready; while :; do sleep 0.05; done']);
    for (let i = 0; i < 300 && !decode([(await s.output(trapped.id)).data]).includes('ready'); ++i) await sleep(20);
    await s.signal(trapped.id, 10);
    const signalled = await s.wait(trapped.id, { timeoutMs: 30_000 });
    assert.equal(signalled.exitCode, 5);
    assert.equal(decode([(await s.output(trapped.id)).data]), 'ready\ngot-usr1\n');
  });

  it('attach from the start follows to the end, and reports what was dropped', async () => {
    const s = await suite.sandbox();
    const c = await s.start(['sh', '-c', 'head -c 5000 /dev/zero | tr "\\0" a; sleep 0.3; echo late; echo err >&2'], {
      keepBytes: 1024,
    });
    const out: Uint8Array[] = [];
    const err: Uint8Array[] = [];
    const dropped: Array<[string, number]> = [];
    await sleep(150);
    const info: CommandInfo = await s.attach(c.id, {
      onStdout: (d) => out.push(d),
      onStderr: (d) => err.push(d),
      onDropped: (stream, bytes) => dropped.push([stream, bytes]),
    });
    assert.equal(info.state, 'exited');
    assert.equal(info.stdoutBytes, 5005);
    // 1 KiB held at most: what came before the attachment was dropped in part.
    assert.ok(dropped.length >= 1 && dropped[0]?.[0] === 'stdout', JSON.stringify(dropped));
    assert.ok(decode(out).endsWith('alate\n'), decode(out).slice(-20));
    assert.equal(decode(out).length + (dropped[0]?.[1] ?? 0), 5005);
    assert.equal(decode(err), 'err\n');
    // Without follow, from an offset: what is held from there, at once.
    const tail: Uint8Array[] = [];
    await s.attach(c.id, { stdoutFrom: 5000, follow: false, onStdout: (d) => tail.push(d) });
    assert.equal(decode(tail), 'late\n');
  });

  it('stop ends everything a command started; a timeout is timedOut; terminals take a size', async () => {
    const s = await suite.sandbox();
    const c = await s.start(['sh', '-c', 'sleep 1000 & setsid sleep 1000 & echo started; wait']);
    for (let i = 0; i < 300 && (await s.command(c.id)).stdoutBytes === 0; ++i) await sleep(20);
    assert.equal((await s.stop(c.id)).state, 'stopped');
    assert.equal(await run(s, 'for p in /proc/[0-9]*; do cat $p/comm; done | grep -c sleep; true'), '0\n');
    const timed = await s.start(['sleep', '1000'], { timeoutMs: 200 });
    assert.equal((await s.wait(timed.id)).state, 'timedOut');
    const t = await s.start(['sh', '-c', 'stty size; read x; stty size'], { terminal: { rows: 30, columns: 100 } });
    assert.equal(t.terminal, true);
    for (let i = 0; i < 300 && (await s.command(t.id)).stdoutBytes === 0; ++i) await sleep(20);
    await s.resize(t.id, { rows: 40, columns: 120 });
    await s.writeInput(t.id, '\r');
    assert.equal((await s.wait(t.id, { timeoutMs: 30_000 })).exitCode, 0);
    assert.match(decode([(await s.output(t.id)).data]), /30 100\r\n[\s\S]*40 120\r\n/);
    // Input to its end: cat ends with it.
    const cat = await s.start(['cat'], { stdin: 'first ' });
    await s.writeInput(cat.id, 'second');
    await s.closeInput(cat.id);
    assert.equal((await s.wait(cat.id, { timeoutMs: 30_000 })).exitCode, 0);
    assert.equal(decode([(await s.output(cat.id)).data]), 'first second');
  });

  it('refuses bad ids, offsets, sizes and signals with their reason', async () => {
    const s = await suite.sandbox();
    const c = await s.start(['true']);
    await s.wait(c.id);
    assert.equal(await reasonOf(s.command('c99')), 'not_found');
    assert.equal(await reasonOf(s.command('C!')), 'invalid_input');
    assert.equal(await reasonOf(s.output(c.id, { from: -1 })), 'invalid_input');
    assert.equal(await reasonOf(s.writeInput(c.id, 'late')), 'invalid_input');
    // A bad signal, and a resize without a terminal, to a command still running.
    const running = await s.start(['sleep', '1000']);
    assert.equal(await reasonOf(s.signal(running.id, 0)), 'invalid_input');
    assert.equal(await reasonOf(s.signal(running.id, 65)), 'invalid_input');
    assert.equal(await reasonOf(s.resize(running.id, { rows: 24, columns: 80 })), 'invalid_input');
    assert.equal((await s.command(running.id)).state, 'running');
    assert.equal((await s.stop(running.id)).state, 'stopped');
    assert.equal(await reasonOf(s.start([])), 'invalid_input');
    assert.equal(await reasonOf(s.start(['true'], { keepBytes: 10 })), 'invalid_input');
    assert.equal(await reasonOf(s.start(['true'], { terminal: { rows: 0, columns: 80 } })), 'invalid_input');
  });
});

describe('exec, the pool and the features through mayurad', () => {
  const suite = suiteDaemon({ maxLifetimeMs: 900_000, network: ['none'] });

  it('gives each piece of output as it comes', async () => {
    const s = await suite.sandbox();
    const pieces: Array<[string, string]> = [];
    const r = await s.exec(['sh', '-c', 'echo one; sleep 0.2; echo two >&2; sleep 0.2; echo three'], {
      onStdout: (d) => pieces.push(['out', new TextDecoder().decode(d)]),
      onStderr: (d) => pieces.push(['err', new TextDecoder().decode(d)]),
    });
    assert.equal(r.stdout, 'one\nthree\n');
    assert.equal(r.stderr, 'two\n');
    assert.deepEqual(pieces, [['out', 'one\n'], ['err', 'two\n'], ['out', 'three\n']]);
  });

  it('keeps its connections: a hundred calls are a handful of connections', async () => {
    const s = await suite.sandbox();
    const before = await metric(suite.daemon, 'mayura_connections_total');
    for (let i = 0; i < 100; ++i) await s.readFile('/etc/hostname').catch(() => s.list('.'));
    const made = (await metric(suite.daemon, 'mayura_connections_total')) - before;
    assert.ok(made <= 5, `${made} connections for 100 calls`);
    // Idle past the daemon's own bound on an idle connection (headerTimeoutMs:
    // the pool's are closed first), and on again.
    await sleep(2_500);
    assert.equal((await s.exec(['true'])).exitCode, 0);
  });

  it('says the features and the longest lifetime the daemon says', async () => {
    const told = await connectNativeSandboxes({ socket: suite.daemon.socket });
    assert.equal(told.maxLifetimeMs, 900_000);
    assert.deepEqual(told.features.network, ['none']);
    assert.equal(told.features.pause, true);
    assert.equal(told.workdir, '/workspace');
    assert.equal(await reasonOf(connectNativeSandboxes({ socket: `${suite.daemon.dir}/nothing.sock` })), 'internal');
  });
});
