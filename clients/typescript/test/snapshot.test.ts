// Snapshots and fork of a sandbox's disk through @mayurajs/sandbox-native
// against a real mayurad: a snapshot holds the files of the working
// directory and /tmp as they were, a create from it starts with them, a
// fork makes sandboxes of their own from the files as they are now (no
// process copied), and the refusals come back as the contract's reasons.
// The daemon, stopped at the end, must have left nothing.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { type NativeSandboxBackend } from '../src/index.js';
import { daemonGet, reasonOf, run, sleep, suiteDaemon, text } from './daemon.js';

// How many `sleep` processes the sandbox runs.
async function sleepers(s: NativeSandboxBackend): Promise<number> {
  return Number(await run(s, 'n=0; for c in /proc/[0-9]*/comm; do [ "$(cat $c 2>/dev/null)" = sleep ] && n=$((n+1)); done; echo $n'));
}

describe('snapshots and fork through mayurad', () => {
  const suite = suiteDaemon();

  it('says it can, as the daemon does', async () => {
    assert.equal(suite.provider.features.snapshot, true);
    const { status, text: body } = await daemonGet(suite.daemon, '/v1/features');
    assert.equal(status, 200);
    assert.equal(JSON.parse(body).features.snapshot, true);
  });

  it('snapshots a disk, and a create from it starts with its files as they were', async () => {
    const s = await suite.sandbox(120_000, { diskMiB: 32 });
    await s.writeFile('notes.txt', 'first');
    await run(s, 'echo kept > /tmp/t; mkdir -p deep/er && echo nested > deep/er/file');
    const before = Date.now();
    const taken = await s.snapshot('base');
    const after = Date.now();
    assert.equal(taken.name, 'base');
    assert.equal(taken.diskMiB, 32);
    assert.ok(Number.isInteger(taken.storedBytes) && taken.storedBytes > 0, `storedBytes ${taken.storedBytes}`);
    assert.ok(taken.storedBytes < 32 * 1024 * 1024, `${taken.storedBytes} bytes stored for a disk holding a few`);
    assert.ok(taken.createdAt >= before - 1000 && taken.createdAt <= after + 1000, `createdAt ${taken.createdAt}`);
    // The original goes on, and what it changes afterwards is not in the snapshot.
    await s.writeFile('notes.txt', 'second');
    await s.writeFile('later.txt', 'after the snapshot');

    const restored = await suite.sandbox(120_000, { snapshot: 'base' });
    assert.equal(await text(restored, 'notes.txt'), 'first');
    assert.equal(await text(restored, 'deep/er/file'), 'nested\n');
    assert.equal(await run(restored, 'cat /tmp/t'), 'kept\n');
    assert.equal(await reasonOf(restored.readFile('later.txt')), 'not_found');
    // Its disk is the snapshot's size, and its own: a write there is not the original's.
    assert.equal(await run(restored, 'stat -f -c %T /workspace'), 'ext2/ext3\n');
    await restored.writeFile('notes.txt', 'restored');
    assert.equal(await text(s, 'notes.txt'), 'second');
    // The same diskMiB beside it is taken.
    const sized = await suite.sandbox(120_000, { snapshot: 'base', diskMiB: 32 });
    assert.equal(await text(sized, 'notes.txt'), 'first');

    // A snapshot of the same name replaces it.
    const again = await s.snapshot('base');
    assert.ok(again.createdAt >= taken.createdAt);
    const replaced = await suite.sandbox(120_000, { snapshot: 'base' });
    assert.equal(await text(replaced, 'notes.txt'), 'second');
    assert.equal(await text(replaced, 'later.txt'), 'after the snapshot');
    assert.equal((await suite.provider.snapshots()).filter((x) => x.name === 'base').length, 1);
    await Promise.all([s, restored, sized, replaced].map((x) => x.release()));
  });

  it('forks into sandboxes of their own, from the files as they are now and with no process', async () => {
    const s = await suite.sandbox(120_000, { diskMiB: 32 });
    await s.writeFile('state', 'v1');
    await run(s, 'echo tmp-v1 > /tmp/state');
    await run(s, 'setsid nohup sleep 600 >/dev/null 2>&1 < /dev/null &');
    // (Started in the background: it is `sleep` once it has exec'd, which a
    // loaded machine may not have done by the next exec.)
    for (let tries = 0; (await sleepers(s)) !== 1 && tries < 100; tries++) await sleep(50);
    assert.equal(await sleepers(s), 1);
    const original = await run(s, 'hostname');

    const forks = suite.keep(await s.fork(2));
    assert.equal(forks.length, 2);
    const names = new Set([original]);
    for (const f of forks) {
      assert.equal(await text(f, 'state'), 'v1');
      assert.equal(await run(f, 'cat /tmp/state'), 'tmp-v1\n');
      assert.equal(await sleepers(f), 0, 'a fork runs none of the original processes');
      names.add(await run(f, 'hostname'));
    }
    assert.equal(names.size, 3, `hostnames ${[...names].join(' ')}`);
    // Each disk is its own.
    const [first, second] = forks as [NativeSandboxBackend, NativeSandboxBackend];
    await first.writeFile('state', 'first');
    assert.equal(await text(second, 'state'), 'v1');
    assert.equal(await text(s, 'state'), 'v1');
    await s.writeFile('state', 'v2');
    assert.equal(await text(first, 'state'), 'first');
    // The original runs on, its process with it.
    assert.equal(await sleepers(s), 1);
    // A fork has a disk of its own to snapshot.
    const ofFork = await first.snapshot('of-a-fork');
    assert.equal(ofFork.diskMiB, 32);
    await Promise.all(forks.map((f) => f.release()));
    assert.equal(await reasonOf(first.exec(['true'])), 'gone');
    assert.equal(await sleepers(s), 1);
    await s.release();
  });

  it('gives a fork its own lifetime', async () => {
    const s = await suite.sandbox(120_000, { diskMiB: 32 });
    const [short] = suite.keep(await s.fork(1, { lifetimeMs: 1000 }));
    assert.ok(short);
    assert.equal(await run(short, 'echo alive'), 'alive\n');
    await sleep(2000);
    assert.equal(await reasonOf(short.exec(['true'])), 'gone');
    assert.equal(await run(s, 'echo alive'), 'alive\n');
    await s.release();
  });

  it('keeps a paused sandbox paused while it is snapshot', async () => {
    const s = await suite.sandbox(120_000, { diskMiB: 32 });
    await s.writeFile('paused.txt', 'still');
    await s.pause();
    await s.snapshot('while-paused');
    assert.equal(await s.paused(), true);
    await s.resume();
    const restored = await suite.sandbox(120_000, { snapshot: 'while-paused' });
    assert.equal(await text(restored, 'paused.txt'), 'still');
    await Promise.all([s, restored].map((x) => x.release()));
  });

  it("lists and deletes the caller's snapshots", async () => {
    const s = await suite.sandbox(120_000, { diskMiB: 16 });
    await s.snapshot('list-b');
    await s.snapshot('list-a');
    const listed = (await suite.provider.snapshots()).filter((x) => x.name.startsWith('list-'));
    assert.deepEqual(listed.map((x) => x.name), ['list-a', 'list-b']);
    for (const x of listed) {
      assert.equal(x.diskMiB, 16);
      assert.ok(Number.isInteger(x.storedBytes) && x.storedBytes > 0);
      assert.ok(Number.isInteger(x.createdAt) && x.createdAt > 0);
    }
    await suite.provider.deleteSnapshot('list-a');
    assert.deepEqual(
      (await suite.provider.snapshots()).filter((x) => x.name.startsWith('list-')).map((x) => x.name),
      ['list-b'],
    );
    assert.equal(await reasonOf(suite.provider.deleteSnapshot('list-a')), 'not_found');
    assert.equal(await reasonOf(suite.provider.create({ lifetimeMs: 60_000, snapshot: 'list-a' })), 'not_found');
    await suite.provider.deleteSnapshot('list-b');
    assert.equal((await suite.provider.snapshots()).filter((x) => x.name.startsWith('list-')).length, 0);
    await s.release();
  });

  it('refuses what it cannot do, with the reasons of the contract', async () => {
    const memory = await suite.sandbox();
    // No disk: nothing to copy.
    assert.equal(await reasonOf(memory.snapshot('nodisk')), 'invalid_input');
    assert.equal(await reasonOf(memory.fork(1)), 'invalid_input');
    // A name there is no snapshot of.
    assert.equal(await reasonOf(suite.provider.create({ lifetimeMs: 60_000, snapshot: 'missing' })), 'not_found');
    assert.equal(await reasonOf(suite.provider.deleteSnapshot('missing')), 'not_found');

    const s = await suite.sandbox(120_000, { diskMiB: 16 });
    await s.snapshot('small');
    // A size that is not the snapshot's.
    assert.equal(await reasonOf(suite.provider.create({ lifetimeMs: 60_000, snapshot: 'small', diskMiB: 32 })), 'invalid_input');
    // Names that are not names.
    for (const name of ['', '-dash', '.dot', 'a/b', 'x'.repeat(65)]) {
      assert.equal(await reasonOf(s.snapshot(name)), 'invalid_input', `snapshot ${JSON.stringify(name)}`);
      assert.equal(await reasonOf(suite.provider.create({ lifetimeMs: 60_000, snapshot: name })), 'invalid_input');
    }
    // Counts and lifetimes a fork does not take.
    for (const count of [0, 65, 1.5]) assert.equal(await reasonOf(s.fork(count)), 'invalid_input', `count ${count}`);
    assert.equal(await reasonOf(s.fork(1, { lifetimeMs: 0 })), 'invalid_input');
    assert.equal(await reasonOf(s.fork(1, { lifetimeMs: 3_600_000 })), 'invalid_input');  // past the daemon's maxLifetimeMs

    // Cancelled before it starts: nothing done.
    const aborted = new AbortController();
    aborted.abort();
    assert.equal(await reasonOf(s.snapshot('cancelled', { signal: aborted.signal })), 'cancelled');
    assert.equal(await reasonOf(s.fork(1, { signal: aborted.signal })), 'cancelled');
    assert.equal((await suite.provider.snapshots()).some((x) => x.name === 'cancelled'), false);

    // A released sandbox is gone.
    await s.release();
    assert.equal(await reasonOf(s.snapshot('after')), 'gone');
    assert.equal(await reasonOf(s.fork(1)), 'gone');
    // Its snapshot outlives it.
    const restored = await suite.sandbox(120_000, { snapshot: 'small' });
    assert.equal(await run(restored, 'echo ok'), 'ok\n');
    await Promise.all([memory, restored].map((x) => x.release()));
  });
});
