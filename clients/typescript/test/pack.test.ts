// npm pack makes a package that installs into an empty project, carries one
// runtime dependency (ws, pinned), imports, and type-checks against a
// consumer file (which needs no types of ws's).

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const here = path.dirname(new URL(import.meta.url).pathname);
const packageDir = path.resolve(here, '../..');  // build-test/test -> the package

const consumer = `import {
  nativeSandboxes,
  SandboxError,
  type SandboxProvider,
  type ExecResult,
  type Snapshot,
  type Volume,
  type DesktopSize,
  type Point,
  type CommandAttachment,
  type CommandInfo,
} from '@mayurajs/sandbox-native';

const provider: SandboxProvider = nativeSandboxes({ socket: '/run/mayura/mayurad.sock', image: 'host' });
export async function run(): Promise<number | null> {
  const backend = await provider.create({ lifetimeMs: 60_000, network: { allow: ['registry.npmjs.org'] } });
  try {
    const r: ExecResult = await backend.exec(['true'], { timeoutMs: 1000, signal: new AbortController().signal });
    const bytes: Uint8Array = await backend.readFile('x');
    void bytes;
    return r.exitCode;
  } catch (e) {
    if (e instanceof SandboxError && e.reason === 'gone') return null;
    throw e;
  } finally {
    await backend.release();
  }
}
export async function pauseOne(): Promise<boolean> {
  const backend = await nativeSandboxes().create({ lifetimeMs: 60_000 });
  await backend.pause({ signal: new AbortController().signal });
  await backend.resume();
  return backend.paused();
}
export async function snapshotAndFork(): Promise<number> {
  const sandboxes = nativeSandboxes();
  const backend = await sandboxes.create({ lifetimeMs: 60_000, diskMiB: 64 });
  const taken: Snapshot = await backend.snapshot('base', { signal: new AbortController().signal });
  const restored = await sandboxes.create({ lifetimeMs: 60_000, snapshot: taken.name });
  const forks = await restored.fork(2, { lifetimeMs: 30_000 });
  await Promise.all([backend, restored, ...forks].map((b) => b.release()));
  const listed: Snapshot[] = await sandboxes.snapshots();
  await sandboxes.deleteSnapshot('base');
  return listed.length + taken.diskMiB + taken.storedBytes + taken.createdAt;
}
export async function useTheDesktop(): Promise<number> {
  const backend = await nativeSandboxes().create({ lifetimeMs: 60_000, desktop: { width: 800, height: 600 } });
  const size: DesktopSize | undefined = backend.desktopSize;
  const png: Uint8Array = await backend.screenshot({ region: { x: 0, y: 0, width: 10, height: 10 }, signal: new AbortController().signal });
  await backend.click({ x: 1, y: 2 }, { button: 'right', count: 2 });
  await backend.move({ x: 3, y: 4 });
  await backend.drag([{ x: 1, y: 1 }, { x: 5, y: 5 }]);
  await backend.scroll({ x: 1, y: 1 }, 'down', { amount: 3 });
  await backend.type('hello');
  await backend.key('ctrl+s');
  const at: Point = await backend.cursorPosition();
  await backend.release();
  const plain = await nativeSandboxes().create({ lifetimeMs: 60_000, desktop: true });
  await plain.release();
  return png.length + at.x + (size?.width ?? 0);
}
export async function driveATerminal(): Promise<CommandInfo> {
  const backend = await nativeSandboxes().create({ lifetimeMs: 60_000 });
  const shell = await backend.start(['sh'], { terminal: { rows: 24, columns: 80 } });
  const seen: CommandInfo = await backend.attach(shell.id, { follow: false, onStdout: (d: Uint8Array) => void d });
  const a: CommandAttachment = await backend.attachInteractive(shell.id, {
    onStdout: (d: Uint8Array) => void d,
    onRefused: (e: SandboxError) => void e.reason,
    signal: new AbortController().signal,
  });
  await a.write('ls\\n');
  await a.write(new Uint8Array([4]));
  await a.resize({ rows: 40, columns: 120 });
  await a.signal(2);
  await a.closeInput();
  const done: CommandInfo = await a.stop();
  await a.close();
  await backend.release();
  return seen.state === 'running' ? done : a.done;
}
export async function keepAVolume(): Promise<boolean> {
  const sandboxes = nativeSandboxes();
  const made: Volume = await sandboxes.createVolume('data', 64, { signal: new AbortController().signal });
  const backend = await sandboxes.create({ lifetimeMs: 60_000, volumes: [{ name: made.name, path: '/data' }] });
  await backend.release();
  const reader = await sandboxes.create({ lifetimeMs: 60_000, volumes: [{ name: 'data', path: '/data', readOnly: true }] });
  await reader.release();
  const listed: Volume[] = await sandboxes.volumes();
  await sandboxes.deleteVolume('data');
  return listed.some((v) => v.inUse) || made.sizeMiB + made.createdAt > 0;
}
`;

describe('the npm package', () => {
  it('packs, installs into an empty project, and type-checks a consumer', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mayura-ts-pack-'));
    try {
      const out = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: packageDir, encoding: 'utf8' });
      const tarball = path.join(dir, out.trim().split('\n').pop() ?? '');
      assert.ok(fs.existsSync(tarball), out);
      const project = path.join(dir, 'consumer');
      fs.mkdirSync(project);
      fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
      execFileSync('npm', ['install', '--silent', '--no-audit', '--no-fund', '--offline', tarball], { cwd: project });
      const installed = JSON.parse(fs.readFileSync(path.join(project, 'node_modules/@mayurajs/sandbox-native/package.json'), 'utf8'));
      const ours = JSON.parse(fs.readFileSync(path.join(packageDir, 'package.json'), 'utf8'));
      assert.match(ours.dependencies.ws, /^8\.\d+\.\d+$/, 'ws pinned');
      assert.deepEqual(installed.dependencies, { ws: ours.dependencies.ws }, 'ws, and no other runtime dependency');
      assert.ok(fs.existsSync(path.join(project, 'node_modules/ws/package.json')));
      assert.ok(fs.existsSync(path.join(project, 'node_modules/@mayurajs/sandbox-native/dist/index.d.ts')));
      assert.equal(fs.existsSync(path.join(project, 'node_modules/@mayurajs/sandbox-native/src')), false, 'sources stay out');

      fs.writeFileSync(path.join(project, 'consumer.ts'), consumer);
      fs.writeFileSync(
        path.join(project, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true,
            typeRoots: [path.join(packageDir, 'node_modules/@types')], types: ['node'],
          },
          files: ['consumer.ts'],
        }),
      );
      execFileSync(process.execPath, [path.join(packageDir, 'node_modules/typescript/bin/tsc'), '-p', project], { encoding: 'utf8' });
      // and a type error in it is found
      fs.writeFileSync(path.join(project, 'consumer.ts'), `${consumer}\nconst wrong: string = provider.maxLifetimeMs;\n`);
      assert.throws(() => execFileSync(process.execPath, [path.join(packageDir, 'node_modules/typescript/bin/tsc'), '-p', project], { stdio: 'pipe' }));

      const kind = execFileSync(process.execPath, ['--input-type=module', '-e', "import('@mayurajs/sandbox-native').then((m) => console.log(typeof m.nativeSandboxes))"], { cwd: project, encoding: 'utf8' });
      assert.equal(kind, 'function\n');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
