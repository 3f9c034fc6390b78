// Volumes through @mayurajs/sandbox-native against a real mayurad: a disk of
// the caller's own, made empty, mounted into one sandbox at a time (read-write
// or read-only) and kept from one to the next until deleted; its size a
// quota the kernel enforces; the daemon's ceiling on a client's volumes
// held; and the refusals come back as the contract's reasons. The daemon,
// stopped at the end, must have left nothing: no volume, no loop device.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { type VolumeMount } from '../src/index.js';
import { daemonGet, reasonOf, run, sleep, suiteDaemon, text } from './daemon.js';

describe('volumes through mayurad', () => {
  // A client's volumes together: 64 MiB at most.
  const suite = suiteDaemon({ maxVolumeMiBPerClient: 64 });

  const mounting = (...volumes: VolumeMount[]) => suite.sandbox(120_000, { volumes });

  async function inUse(name: string): Promise<boolean | undefined> {
    return (await suite.provider.volumes()).find((v) => v.name === name)?.inUse;
  }

  // Deleted once its last sandbox, released a moment ago, has let go of it
  // (until then the daemon says it is in use: invalid_input).
  async function deleteReleased(name: string): Promise<void> {
    for (let i = 0; ; ++i) {
      const reason = await reasonOf(suite.provider.deleteVolume(name));
      if (reason === 'no failure') return;
      assert.ok(reason === 'invalid_input' && i < 200, `deleting the volume ${name}: ${reason}`);
      await sleep(50);
    }
  }

  it('says it can, as the daemon does', async () => {
    assert.equal(suite.provider.features.volumes, true);
    const { status, text: body } = await daemonGet(suite.daemon, '/v1/features');
    assert.equal(status, 200);
    assert.equal(JSON.parse(body).features.volumes, true);
  });

  it('keeps what one sandbox wrote for the next, which may mount it read-only', async () => {
    const before = Date.now();
    const made = await suite.provider.createVolume('data', 32);
    const after = Date.now();
    assert.equal(made.name, 'data');
    assert.equal(made.sizeMiB, 32);
    assert.equal(made.inUse, false);
    assert.ok(made.createdAt >= before - 1000 && made.createdAt <= after + 1000, `createdAt ${made.createdAt}`);
    assert.deepEqual(await suite.provider.volumes(), [made]);

    const writer = await mounting({ name: 'data', path: '/data' });
    // A file system of its own, the sandbox's user's, empty.
    assert.equal(await run(writer, 'stat -f -c %T /data; stat -c %u /data; ls -A /data | wc -l'), 'ext2/ext3\n1000\n0\n');
    await writer.writeFile('/data/notes.txt', 'first');
    await run(writer, 'mkdir -p /data/deep/er && echo nested > /data/deep/er/file');
    assert.equal(await inUse('data'), true);
    await writer.release();

    // Under the working directory, read-only: the files are there, and no write goes.
    const reader = await mounting({ name: 'data', path: '/workspace/ro', readOnly: true });
    assert.equal(await text(reader, 'ro/notes.txt'), 'first');
    assert.equal(await text(reader, '/workspace/ro/deep/er/file'), 'nested\n');
    assert.equal(await reasonOf(reader.writeFile('ro/new.txt', 'x')), 'permission_denied');
    const write = await reader.exec(['sh', '-c', 'echo x > ro/notes.txt']);
    assert.notEqual(write.exitCode, 0);
    assert.match(write.stderr, /Read-only file system/);
    assert.equal(await text(reader, 'ro/notes.txt'), 'first');
    await reader.release();

    // And read-write again: what the first wrote, and what this one writes, are kept.
    const again = await mounting({ name: 'data', path: '/data' });
    await again.writeFile('/data/notes.txt', 'second');
    await again.release();
    const last = await mounting({ name: 'data', path: '/data', readOnly: true });
    assert.equal(await text(last, '/data/notes.txt'), 'second');
    await last.release();
    await deleteReleased('data');
    assert.deepEqual(await suite.provider.volumes(), []);
  });

  it('is one sandbox\'s at a time, and not deleted while one has it', async () => {
    await suite.provider.createVolume('one', 16);
    const first = await mounting({ name: 'one', path: '/one' });
    assert.equal(await reasonOf(mounting({ name: 'one', path: '/one', readOnly: true })), 'invalid_input');
    assert.equal(await reasonOf(suite.provider.deleteVolume('one')), 'invalid_input');
    await first.writeFile('/one/f', 'first');
    await first.release();
    // Released: the next takes it at once (the daemon waits for the first to let go).
    const second = await mounting({ name: 'one', path: '/one' });
    assert.equal(await text(second, '/one/f'), 'first');
    await second.release();
    await deleteReleased('one');
  });

  it('bounds what a volume holds by its size', async () => {
    await suite.provider.createVolume('small', 16);
    const s = await mounting({ name: 'small', path: '/small' });
    const over = await s.exec(['sh', '-c', 'head -c 20M /dev/zero > /small/big']);
    assert.notEqual(over.exitCode, 0);
    assert.match(over.stderr, /No space left on device/);
    // The working directory is not the volume's.
    assert.equal(await run(s, 'head -c 4M /dev/zero > f && stat -c %s f'), '4194304\n');
    await s.release();
    await deleteReleased('small');
  });

  it('gives a fork none of the original\'s volumes', async () => {
    await suite.provider.createVolume('kept', 16);
    const s = await suite.sandbox(120_000, { diskMiB: 16, volumes: [{ name: 'kept', path: '/kept' }] });
    await s.writeFile('/kept/f', 'the original\'s');
    const [fork] = suite.keep(await s.fork(1));
    assert.ok(fork);
    assert.equal(await reasonOf(fork.readFile('/kept/f')), 'not_found');
    assert.equal(await inUse('kept'), true);
    await Promise.all([s, fork].map((x) => x.release()));
    await deleteReleased('kept');
  });

  it("lists and deletes the caller's volumes", async () => {
    await suite.provider.createVolume('list-b', 16);
    await suite.provider.createVolume('list-a', 16);
    const listed = await suite.provider.volumes();
    assert.deepEqual(listed.map((v) => v.name), ['list-a', 'list-b']);
    for (const v of listed) {
      assert.equal(v.sizeMiB, 16);
      assert.equal(v.inUse, false);
      assert.ok(Number.isInteger(v.createdAt) && v.createdAt > 0);
    }
    await suite.provider.deleteVolume('list-a');
    assert.deepEqual((await suite.provider.volumes()).map((v) => v.name), ['list-b']);
    assert.equal(await reasonOf(suite.provider.deleteVolume('list-a')), 'not_found');
    assert.equal(await reasonOf(mounting({ name: 'list-a', path: '/v' })), 'not_found');
    await suite.provider.deleteVolume('list-b');
    assert.deepEqual(await suite.provider.volumes(), []);
  });

  it("refuses a volume past the daemon's maxVolumeMiBPerClient, before it is made", async () => {
    await suite.provider.createVolume('big', 48);
    await suite.provider.createVolume('fits', 16);
    assert.equal(await reasonOf(suite.provider.createVolume('past', 16)), 'limit_reached');
    assert.deepEqual((await suite.provider.volumes()).map((v) => v.name), ['big', 'fits']);
    // A deletion gives its share back.
    await suite.provider.deleteVolume('fits');
    await suite.provider.createVolume('past', 16);
    await suite.provider.deleteVolume('past');
    await suite.provider.deleteVolume('big');
  });

  it('refuses what it cannot do, with the reasons of the contract', async () => {
    // Names that are not names, sizes it does not make.
    for (const name of ['', '-dash', '.dot', 'a/b', 'a b', 'x'.repeat(65)]) {
      assert.equal(await reasonOf(suite.provider.createVolume(name, 16)), 'invalid_input', `volume ${JSON.stringify(name)}`);
      assert.equal(await reasonOf(mounting({ name, path: '/v' })), 'invalid_input', `mounting ${JSON.stringify(name)}`);
    }
    for (const size of [0, 8, 15, 1.5, 2 ** 24 + 1]) {
      assert.equal(await reasonOf(suite.provider.createVolume('sized', size)), 'invalid_input', `size ${size}`);
    }
    // None of that name.
    assert.equal(await reasonOf(mounting({ name: 'missing', path: '/v' })), 'not_found');
    assert.equal(await reasonOf(suite.provider.deleteVolume('missing')), 'not_found');

    await suite.provider.createVolume('v', 16);
    await suite.provider.createVolume('w', 16);
    // A name taken.
    assert.equal(await reasonOf(suite.provider.createVolume('v', 16)), 'invalid_input');
    // Paths it does not go at.
    for (const path of ['', 'v', '/', '/proc', '/dev/v', '/sys/x', '/tmp', '/workspace', '/a/../b', '/a//b', '/a/']) {
      assert.equal(await reasonOf(mounting({ name: 'v', path })), 'invalid_input', `path ${JSON.stringify(path)}`);
    }
    // Twice, or two at one path, or more than 16.
    assert.equal(await reasonOf(mounting({ name: 'v', path: '/a' }, { name: 'v', path: '/b' })), 'invalid_input');
    assert.equal(await reasonOf(mounting({ name: 'v', path: '/a' }, { name: 'w', path: '/a' })), 'invalid_input');
    const many = Array.from({ length: 17 }, (_, i) => ({ name: `v${i}`, path: `/v${i}` }));
    assert.equal(await reasonOf(mounting(...many)), 'invalid_input');
    // Cancelled before it starts: nothing made.
    const aborted = new AbortController();
    aborted.abort();
    assert.equal(await reasonOf(suite.provider.createVolume('cancelled', 16, { signal: aborted.signal })), 'cancelled');
    assert.deepEqual((await suite.provider.volumes()).map((v) => v.name), ['v', 'w']);
    // None of these made a sandbox or took a volume.
    assert.equal(await inUse('v'), false);
    assert.equal(await inUse('w'), false);
    await suite.provider.deleteVolume('v');
    await suite.provider.deleteVolume('w');
  });
});
