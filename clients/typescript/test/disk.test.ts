// A working directory on a disk of its own (diskMiB) through
// @mayurajs/sandbox-native against a real mayurad: writes past its size fail
// ENOSPC inside, and /tmp stays in memory.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';

import { suiteDaemon } from './daemon.js';

describe('a disk through mayurad', () => {
  const suite = suiteDaemon();

  it('says it can, and holds writes up to its size and no more', async () => {
    assert.equal(suite.provider.features.disk, true);
    const s = await suite.provider.create({ lifetimeMs: 120_000, diskMiB: 32 });
    try {
      const kind = await s.exec(['stat', '-f', '-c', '%T', '/workspace']);
      assert.equal(kind.stdout, 'ext2/ext3\n');
      const fits = await s.exec(['sh', '-c', 'head -c 8M /dev/zero > eight']);
      assert.equal(fits.exitCode, 0, fits.stderr);
      const over = await s.exec(['sh', '-c', 'head -c 40M /dev/zero > forty']);
      assert.notEqual(over.exitCode, 0);
      assert.match(over.stderr, /No space left on device/);
    } finally {
      await s.release();
    }
  });

  // The daemon's host decides: bounded on cgroup2's io controller, refused
  // clearly elsewhere (this project's hybrid machines).
  it('bounds the disk\'s I/O where the host can, and says why not elsewhere', async () => {
    const controllers = '/sys/fs/cgroup/cgroup.controllers';
    const canBound = existsSync(controllers) && readFileSync(controllers, 'utf8').split(/\s+/).includes('io');
    const create = suite.provider.create({ lifetimeMs: 120_000, diskMiB: 32, diskIo: { writeBps: 1 << 20, readIops: 100 } });
    if (!canBound) {
      await assert.rejects(create, (e: Error & { reason?: string }) => e.reason === 'invalid_input');
      return;
    }
    const s = await create;
    try {
      const wrote = await s.exec(['sh', '-c', 'dd if=/dev/zero of=f bs=1M count=2 oflag=direct 2>&1']);
      assert.equal(wrote.exitCode, 0, wrote.stdout);
    } finally {
      await s.release();
    }
  });

  it('sends writableRoot: refused without a disk, and on the host\'s image', async () => {
    for (const options of [{ writableRoot: true }, { writableRoot: true, diskMiB: 16 }]) {
      await assert.rejects(
        suite.provider.create({ lifetimeMs: 120_000, ...options }),
        (e: Error & { reason?: string }) => e.reason === 'invalid_input',
      );
    }
  });
});
