// The desktop through @mayurajs/sandbox-native against a real mayurad: Xvfb
// from the host image in the sandbox, the C++ tests' own X client
// (tests/desktop/x_client, from the build: MAYURA_X_CLIENT) painting known
// colours and writing every event it gets to a log, and every desktop call
// through the provider. Bad input fails invalid_input in the provider,
// before any request. The daemon, stopped at the end, must have left
// nothing (an X server left would be a process in its id range).

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, it } from 'node:test';

import {
  connectNativeSandboxes,
  SandboxError,
  type CreateOptions,
  type NativeSandboxBackend,
  type Point,
  type ScrollDirection,
} from '../src/index.js';
import { metric, reasonOf, sleep, suiteDaemon, text } from './daemon.js';
import { decodePng, pngHeader } from './png.js';

const here = path.dirname(new URL(import.meta.url).pathname);
const X_CLIENT = process.env.MAYURA_X_CLIENT ?? path.resolve(here, '../../../../build/tests/x_client');

// The client's log once it holds `wanted` (or, after 30 s, whatever it holds).
async function logWith(s: NativeSandboxBackend, wanted: string): Promise<string> {
  let log = '';
  for (const until = Date.now() + 30_000; Date.now() < until;) {
    try {
      log = await text(s, '/workspace/log');
    } catch (error) {
      if (!(error instanceof SandboxError && error.reason === 'not_found')) throw error;
      log = '';  // not made yet
    }
    if (log.includes(wanted)) break;
    await sleep(20);
  }
  return log;
}

// The log's lines of these kinds.
const events = (log: string, kinds: string[]) =>
  log.split('\n').filter((line) => kinds.some((k) => line.startsWith(`${k} `)));

// The X client started in the sandbox, held by the daemon; once its window
// is painted and has the focus.
async function startClient(s: NativeSandboxBackend): Promise<void> {
  assert.ok(fs.existsSync(X_CLIENT), `the tests' X client is built: ${X_CLIENT}`);
  await s.writeFile('/workspace/x_client', fs.readFileSync(X_CLIENT));
  assert.equal((await s.exec(['chmod', '755', '/workspace/x_client'])).exitCode, 0);
  await s.start(['/workspace/x_client', '/workspace/log']);
  const { width, height } = s.desktopSize!;
  assert.match(await logWith(s, `ready ${width} ${height}`), new RegExp(`^ready ${width} ${height}$`, 'm'));
}

describe('the desktop through mayurad', () => {
  const suite = suiteDaemon();
  // Each test's sandboxes, released once it ends (the daemon's slots are few).
  const made: NativeSandboxBackend[] = [];
  afterEach(async () => {
    await Promise.all(made.splice(0).map((s) => s.release()));
  });
  const sandbox = async (options: Omit<CreateOptions, 'lifetimeMs'> = {}) => {
    const s = await suite.sandbox(120_000, options);
    made.push(s);
    return s;
  };
  const desktop = (width = 640, height = 480) => sandbox({ desktop: { width, height } });

  it('says it has one, as the daemon does, and makes screens of the size asked', async () => {
    assert.equal(suite.provider.features.desktop, true);
    assert.equal((await connectNativeSandboxes({ socket: suite.daemon.socket })).features.desktop, true);
    const s = await desktop(640, 480);
    assert.deepEqual(s.desktopSize, { width: 640, height: 480 });
    assert.equal((await s.exec(['sh', '-c', 'echo $DISPLAY'])).stdout, ':0\n');
    assert.deepEqual(pngHeader(await s.screenshot()), { width: 640, height: 480, bitDepth: 8, colourType: 2, interlace: 0 });
    // true: the default screen, 1280x800
    const wide = await sandbox({ desktop: true });
    assert.deepEqual(wide.desktopSize, { width: 1280, height: 800 });
    const header = pngHeader(await wide.screenshot());
    assert.deepEqual([header.width, header.height], [1280, 800]);
    // the smallest and the largest
    const small = await desktop(64, 64);
    assert.deepEqual([pngHeader(await small.screenshot()).width, pngHeader(await small.screenshot()).height], [64, 64]);
    await small.release();
    const largest = await desktop(3840, 2160);
    const big = pngHeader(await largest.screenshot());
    assert.deepEqual([big.width, big.height], [3840, 2160]);
    await largest.release();
    // none: no desktop, and no DISPLAY
    const plain = await sandbox({ desktop: false });
    assert.equal(plain.desktopSize, undefined);
    assert.equal((await plain.exec(['sh', '-c', 'echo "[$DISPLAY]"'])).stdout, '[]\n');
  });

  it('shows what a client painted, where it painted it, whole or a region', async () => {
    const s = await desktop();
    await startClient(s);
    const screen = decodePng(await s.screenshot());
    assert.deepEqual([screen.width, screen.height], [640, 480]);
    // the client's rectangles (tests/desktop/x_client.cpp) on white
    assert.equal(screen.at(10, 10), 0xff0000);
    assert.equal(screen.at(109, 59), 0xff0000);
    assert.equal(screen.at(110, 60), 0xffffff);
    assert.equal(screen.at(225, 125), 0x00ff00);
    assert.equal(screen.at(639, 479), 0x0000ff);
    assert.equal(screen.at(305, 305), 0x123456);
    const region = await s.screenshot({ region: { x: 195, y: 95, width: 60, height: 60 } });
    assert.deepEqual([pngHeader(region).width, pngHeader(region).height], [60, 60]);
    const part = decodePng(region);
    assert.equal(part.at(0, 0), 0xffffff);
    assert.equal(part.at(5, 5), 0x00ff00);
    // a region at the screen's far corner, one pixel
    const corner = await s.screenshot({ region: { x: 639, y: 479, width: 1, height: 1 } });
    assert.deepEqual([pngHeader(corner).width, pngHeader(corner).height], [1, 1]);
    assert.equal(decodePng(corner).at(0, 0), 0x0000ff);
  });

  it('clicks, drags, scrolls and moves where asked, and the cursor says where it is', async () => {
    const s = await desktop();
    await startClient(s);
    await s.click({ x: 50, y: 30 });
    assert.deepEqual(await s.cursorPosition(), { x: 50, y: 30 });
    await s.click({ x: 300, y: 200 }, { button: 'right', count: 2 });
    await s.click({ x: 60, y: 40 }, { button: 'middle' });
    await s.drag([{ x: 100, y: 100 }, { x: 150, y: 120 }, { x: 200, y: 140 }]);
    assert.deepEqual(await s.cursorPosition(), { x: 200, y: 140 });
    await s.scroll({ x: 320, y: 240 }, 'down', { amount: 3 });
    await s.scroll({ x: 10, y: 20 }, 'left');
    await s.scroll({ x: 11, y: 21 }, 'up');
    await s.scroll({ x: 12, y: 22 }, 'right', { amount: 2 });
    await s.move({ x: 639, y: 479 });
    assert.deepEqual(await s.cursorPosition(), { x: 639, y: 479 });
    // buttons: 1 left, 2 middle, 3 right; the wheel 4 up, 5 down, 6 left, 7 right
    // (the move is the last event: once it is logged, all before it are)
    const log = await logWith(s, 'motion 639 479 0');
    assert.deepEqual(events(log, ['press', 'release']), [
      'press 1 50 30', 'release 1 50 30',
      'press 3 300 200', 'release 3 300 200', 'press 3 300 200', 'release 3 300 200',
      'press 2 60 40', 'release 2 60 40',
      'press 1 100 100', 'release 1 200 140',
      'press 5 320 240', 'release 5 320 240', 'press 5 320 240', 'release 5 320 240', 'press 5 320 240', 'release 5 320 240',
      'press 6 10 20', 'release 6 10 20',
      'press 4 11 21', 'release 4 11 21',
      'press 7 12 22', 'release 7 12 22', 'press 7 12 22', 'release 7 12 22',
    ]);
    // the drag went through its points with button 1 held (state 0x100),
    // and the move arrived
    const motion = events(log, ['motion']);
    assert.ok(motion.includes('motion 150 120 100'), log);
    assert.ok(motion.includes('motion 200 140 100'), log);
    assert.ok(motion.includes('motion 639 479 0'), log);
  });

  it('types text and presses key combos exactly', async () => {
    const s = await desktop();
    await startClient(s);
    await s.type('Hi, wörld € 日\n');
    await s.key('ctrl+shift+t alt+Tab');
    const log = await logWith(s, 'keyup ff09');
    // each key's keysym as the client saw it (Shift_L's own press left out)
    const typed = events(log, ['key'])
      .map((line) => line.split(' '))
      .filter(([, plain]) => plain !== 'ffe1')
      .map(([, , shifted]) => shifted);
    // H i , space w ö r l d space € space 日 Return, then Control_L t Alt_L Tab
    assert.deepEqual(
      typed,
      ['48', '69', '2c', '20', '77', 'f6', '72', '6c', '64', '20', '20ac', '20', '10065e5', 'ff0d', 'ffe3', '54', 'ffe9', 'ff09'],
      log,
    );
    assert.ok(log.includes('key 74 54 5\n'), log);  // t with Control and Shift held
    assert.ok(log.includes('key ff09 ff09 8\n'), log);  // Tab with Alt held
  });

  it('refuses bad input with invalid_input before any request', async () => {
    const s = await desktop();
    await startClient(s);
    const plain = await sandbox();
    // The failure's reason and message: the provider's own words, never the
    // daemon's (whose 400 would read "the provider answered HTTP 400").
    const refused = async (call: Promise<unknown>, says: RegExp) => {
      try {
        await call;
      } catch (error) {
        assert.ok(error instanceof SandboxError, String(error));
        assert.equal(error.reason, 'invalid_input', error.message);
        assert.match(error.message, says);
        return;
      }
      assert.fail(`no failure (expected ${says})`);
    };
    // What the daemon has answered: /metrics counts every request, its own
    // read included (two reads in a row tell what one read adds).
    const requests = () => metric(suite.daemon, 'mayura_requests_total');
    const first = await requests();
    const before = await requests();
    const perRead = before - first;
    await refused(s.click({ x: 640, y: 0 }), /\(640, 0\) is outside the screen \(640x480\)/);
    await refused(s.move({ x: -1, y: 5 }), /outside the screen/);
    await refused(s.move({ x: 0, y: 480 }), /outside the screen/);
    await refused(s.move({ x: 1.5, y: 2 }), /whole numbers/);
    await refused(s.move({ x: '1', y: 2 } as unknown as Point), /whole numbers/);
    await refused(s.move(null as unknown as Point), /whole numbers/);
    await refused(s.click({ x: 5, y: 5 }, { count: 4 }), /a click count is 1 to 3/);
    await refused(s.click({ x: 5, y: 5 }, { count: 0 }), /a click count is 1 to 3/);
    await refused(s.click({ x: 5, y: 5 }, { button: 'fourth' as 'left' }), /a mouse button is left, middle or right/);
    await refused(s.drag([{ x: 1, y: 1 }]), /2 to 1000 points/);
    await refused(s.drag(Array.from({ length: 1001 }, (_, i) => ({ x: i % 640, y: 0 }))), /2 to 1000 points/);
    await refused(s.drag([{ x: 1, y: 1 }, { x: 700, y: 1 }]), /outside the screen/);
    await refused(s.scroll({ x: 1, y: 1 }, 'up', { amount: 0 }), /amount is 1 to 100/);
    await refused(s.scroll({ x: 1, y: 1 }, 'up', { amount: 101 }), /amount is 1 to 100/);
    await refused(s.scroll({ x: 1, y: 1 }, 'sideways' as ScrollDirection), /direction is up, down, left or right/);
    await refused(s.scroll({ x: 1, y: 700 }, 'down'), /outside the screen/);
    await refused(s.type(''), /no text to type/);
    await refused(s.type('caf\ud800'), /lone surrogate/);
    await refused(s.type('x'.repeat(64 * 1024 + 1)), /more than 65536 bytes/);
    await refused(s.type('é'.repeat(32 * 1024 + 1)), /more than 65536 bytes/);  // 2 bytes each in UTF-8
    await refused(s.key(''), /no key to press/);
    await refused(s.screenshot({ region: { x: 600, y: 400, width: 41, height: 10 } }), /not on the screen \(640x480\)/);
    await refused(s.screenshot({ region: { x: 0, y: 0, width: 0, height: 10 } }), /not on the screen/);
    await refused(s.screenshot({ region: { x: -1, y: 0, width: 10, height: 10 } }), /not on the screen/);
    // a sandbox without a desktop: every call
    const none = /the sandbox has no desktop/;
    await refused(plain.screenshot(), none);
    await refused(plain.cursorPosition(), none);
    await refused(plain.move({ x: 0, y: 0 }), none);
    await refused(plain.click({ x: 0, y: 0 }), none);
    await refused(plain.drag([{ x: 0, y: 0 }, { x: 1, y: 1 }]), none);
    await refused(plain.scroll({ x: 0, y: 0 }, 'down'), none);
    await refused(plain.type('a'), none);
    await refused(plain.key('a'), none);
    // a screen of no allowed size, or no size at all
    await refused(suite.provider.create({ lifetimeMs: 60_000, desktop: { width: 10, height: 10 } }), /64x64 to 3840x2160, not 10x10/);
    await refused(suite.provider.create({ lifetimeMs: 60_000, desktop: { width: 3841, height: 600 } }), /not 3841x600/);
    await refused(suite.provider.create({ lifetimeMs: 60_000, desktop: { width: 800, height: 2161 } }), /not 800x2161/);
    await refused(suite.provider.create({ lifetimeMs: 60_000, desktop: { width: 800.5, height: 600 } }), /not 800.5x600/);
    await refused(suite.provider.create({ lifetimeMs: 60_000, desktop: 'yes' as unknown as boolean }), /desktop is true, false or/);
    // none of them reached the daemon: only this read came after the last;
    // and a desktop call that does reach it is counted
    assert.equal(await requests(), before + perRead);
    await s.cursorPosition();
    assert.equal(await requests(), before + 2 * perRead + 1);
    // nothing reached the client: a key typed after them all is logged once
    // every event before it has been
    await s.type('z');
    assert.deepEqual(events(await logWith(s, 'keyup 7a'), ['press', 'release', 'motion', 'key']), ['key 7a 7a 0']);
  });

  it('says what the daemon refuses: an unknown key name', async () => {
    const s = await desktop();
    assert.equal(await reasonOf(s.key('ctrl+NoSuchKey')), 'invalid_input');
    assert.equal(await reasonOf(s.key('ctrl+')), 'invalid_input');
  });

  it('resumes a paused sandbox for a desktop call, cancels, and is gone once released', async () => {
    const s = await desktop();
    await s.pause();
    assert.equal(pngHeader(await s.screenshot()).width, 640);
    assert.equal(await s.paused(), false);
    const aborted = new AbortController();
    aborted.abort();
    assert.equal(await reasonOf(s.screenshot({ signal: aborted.signal })), 'cancelled');
    assert.equal(await reasonOf(s.click({ x: 1, y: 1 }, { signal: aborted.signal })), 'cancelled');
    await s.release();
    assert.equal(await reasonOf(s.screenshot()), 'gone');
    assert.equal(await reasonOf(s.cursorPosition()), 'gone');
    assert.equal(await reasonOf(s.click({ x: 1, y: 1 })), 'gone');
  });

  it('gives a fork the same screen, its own display', async () => {
    const s = await sandbox({ desktop: { width: 320, height: 200 }, diskMiB: 64 });
    await startClient(s);
    const [fork] = suite.keep(await s.fork(1));
    made.push(...(fork ? [fork] : []));
    assert.ok(fork);
    assert.deepEqual(fork.desktopSize, { width: 320, height: 200 });
    const image = decodePng(await fork.screenshot());
    assert.deepEqual([image.width, image.height], [320, 200]);
    // no process is copied: the fork's screen has no client's window
    assert.notEqual(image.at(10, 10), 0xff0000);
    assert.equal(decodePng(await s.screenshot()).at(10, 10), 0xff0000);
  });
});
