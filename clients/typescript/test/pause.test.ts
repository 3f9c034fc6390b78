// Pause and resume through @mayurajs/sandbox-native against a real mayurad:
// a paused sandbox's processes stand still and go on where they were; exec
// and the file calls resume it; a paused sandbox is released, and ended at
// its lifetime, like any other. The daemon, stopped at the end, must have
// left nothing.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { type NativeSandboxBackend } from '../src/index.js';
import { daemonGet, reasonOf, suiteDaemon, type Daemon } from './daemon.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// A counter in the background, one up every 50 ms, in the workdir's `count`
// (written aside and renamed: a read never sees it half written).
const COUNTER = 'i=0; while :; do i=$((i+1)); echo $i > count.new; mv count.new count; sleep 0.05; done';

async function startCounter(s: NativeSandboxBackend): Promise<void> {
  const r = await s.exec(['sh', '-c', `setsid nohup sh -c '${COUNTER}' >/dev/null 2>&1 < /dev/null &`]);
  assert.equal(r.exitCode, 0, r.stderr);
}

// The counter, read with the file API (which resumes a paused sandbox).
async function counter(s: NativeSandboxBackend): Promise<number> {
  const n = Number(new TextDecoder().decode(await s.readFile('count')));
  assert.ok(Number.isInteger(n), 'the counter is a number');
  return n;
}

// The counter, read with exec, once it is at least `n` (or 10 s pass).
async function counterAtLeast(s: NativeSandboxBackend, n: number): Promise<number> {
  let seen = -1;
  for (let i = 0; i < 200 && seen < n; ++i) {
    if (i > 0) await sleep(50);
    seen = Number((await s.exec(['sh', '-c', 'cat count 2>/dev/null || echo -1'])).stdout);
  }
  return seen;
}

// The daemon's own GET /v1/features.
async function daemonFeatures(daemon: Daemon): Promise<Record<string, unknown>> {
  const { status, text } = await daemonGet(daemon, '/v1/features');
  if (status !== 200) throw new Error(`GET /v1/features: HTTP ${status}`);
  return JSON.parse(text).features;
}

describe('pause and resume through mayurad', () => {
  const suite = suiteDaemon();

  it('says it can, as the daemon does', async () => {
    assert.equal(suite.provider.features.pause, true);
    assert.equal((await daemonFeatures(suite.daemon)).pause, true);
  });

  it('stops every process while paused, and lets them go on where they were', async () => {
    const s = await suite.sandbox();
    await startCounter(s);
    assert.ok((await counterAtLeast(s, 3)) >= 3, 'the counter counts');
    assert.equal(await s.paused(), false);
    const atPause = await counter(s);
    await s.pause();
    assert.equal(await s.paused(), true);
    await sleep(1000);
    assert.equal(await s.paused(), true);  // reading its details does not resume it
    await s.resume();
    assert.equal(await s.paused(), false);
    const atResume = await counter(s);
    // A second at 50 ms would be some 20 more had it run.
    assert.ok(atResume >= atPause && atResume <= atPause + 5, `${atPause} as it was paused, ${atResume} a second later`);
    // It goes on from there (the same shell, not a new one from zero): its
    // next tick is the event, awaited up to 10 s.
    const later = await counterAtLeast(s, atResume + 1);
    assert.ok(later > atResume, `${atResume} as it was resumed, ${later} after`);
  });

  it('is resumed by exec and by the file calls; pausing twice or resuming a running one does nothing', async () => {
    const s = await suite.sandbox();
    await s.pause();
    const r = await s.exec(['echo', 'ran']);
    assert.equal(r.exitCode, 0);
    assert.equal(r.stdout, 'ran\n');
    assert.equal(await s.paused(), false);

    await s.pause();
    await s.writeFile('note.txt', 'written');
    assert.equal(await s.paused(), false);
    await s.pause();
    assert.equal(new TextDecoder().decode(await s.readFile('note.txt')), 'written');
    assert.equal(await s.paused(), false);

    await s.pause();
    await s.pause();
    assert.equal(await s.paused(), true);
    await s.resume();
    await s.resume();
    assert.equal(await s.paused(), false);

    // an aborted signal: cancelled, and nothing done
    const aborted = new AbortController();
    aborted.abort();
    assert.equal(await reasonOf(s.pause({ signal: aborted.signal })), 'cancelled');
    assert.equal(await s.paused(), false);
  });

  it('releases a paused sandbox, with everything in it', async () => {
    const s = await suite.provider.create({ lifetimeMs: 120_000 });
    await startCounter(s);
    await s.pause();
    await s.release();
    assert.equal(await reasonOf(s.paused()), 'gone');
    assert.equal(await reasonOf(s.resume()), 'gone');
    assert.equal(await reasonOf(s.pause()), 'gone');
    assert.equal(await reasonOf(s.exec(['true'])), 'gone');
    // (the daemon's stop checks that none of its processes is left)
  });

  it('ends a paused sandbox at its lifetime', async () => {
    const s = await suite.sandbox(1000);
    await startCounter(s);
    await s.pause();
    await sleep(2000);
    assert.equal(await reasonOf(s.exec(['true'])), 'gone');
    assert.equal(await reasonOf(s.paused()), 'gone');
  });
});
