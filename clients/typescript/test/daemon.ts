// A real mayurad for the tests, on a scratch socket with its own state, cgroup
// root, id range, disks, snapshots and volumes, and the check that it left
// nothing behind once it has stopped: no process in its id range, no cgroup
// under its root (cgroup2 and v1), no loop device bound to a file of its. (That a stopped daemon leaves no network namespace or nftables table
// is the C++ suite's DaemonTest; these tests make sandboxes with no network
// but a published port's few.)

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

import { after, before } from 'node:test';

import {
  nativeSandboxes,
  SandboxError,
  type CreateOptions,
  type NativeSandboxBackend,
  type NativeSandboxProvider,
  type SandboxBackend,
} from '../src/index.js';

const here = path.dirname(new URL(import.meta.url).pathname);
// build-test/test -> clients/typescript -> the repository
const repository = path.resolve(here, '../../../..');

export const MAYURAD = process.env.MAYURAD ?? path.join(repository, 'build/tools/mayurad');

export interface Daemon {
  socket: string;
  dir: string;
  stop(): Promise<void>;
}

// A range of its own for each test process (test files run at once): leased
// by making /run/lock/mayura-ts-ids-N, which holds the leaser's pid, and
// given back when the process exits. A lease whose process is gone is
// taken over. (Two processes whose pids agree modulo the count would share
// a range otherwise, and take each other's sandboxes for leaks.)
const ID_SLOTS = 16;
const ID_RANGES = 64;
function leaseIdRange(): number {
  for (let i = 0; i < ID_RANGES; ++i) {
    const range = (process.pid + i) % ID_RANGES;
    const lease = `/run/lock/mayura-ts-ids-${range}`;
    try {
      fs.mkdirSync(lease);
    } catch {
      let holder = 0;
      try {
        holder = Number(fs.readFileSync(`${lease}/pid`, 'utf8'));
      } catch {
        continue;  // being made by its leaser just now
      }
      try {
        process.kill(holder, 0);
        continue;  // alive: not ours
      } catch {
        // gone: ours now
      }
    }
    fs.writeFileSync(`${lease}/pid`, String(process.pid));
    process.on('exit', () => fs.rmSync(lease, { recursive: true, force: true }));
    return range;
  }
  throw new Error(`every one of the ${ID_RANGES} test id ranges is leased`);
}
const ID_BASE = 0x70000000 + leaseIdRange() * ID_SLOTS * 65536;

// Where the engine would put its root, under a name of the test's: the
// cgroup2 mount (pure cgroup2, hybrid), or the one it mounts on a v1 host.
function cgroupRootFor(name: string): string {
  if (fs.existsSync('/sys/fs/cgroup/cgroup.controllers')) return `/sys/fs/cgroup/${name}`;
  if (fs.existsSync('/sys/fs/cgroup/unified/cgroup.controllers')) return `/sys/fs/cgroup/unified/${name}`;
  return `/run/mayura-cgroup2/${name}`;
}

function answers(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const c = net.connect(socket);
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
}

export async function startDaemon(settings: Record<string, unknown> = {}): Promise<Daemon> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mayura-ts-'));
  fs.chmodSync(dir, 0o755);
  const name = path.basename(dir);
  const socket = path.join(dir, 'mayurad.sock');
  const config = {
    socket,
    socketMode: '0600',
    stateDir: path.join(dir, 'state'),
    diskDir: path.join(dir, 'disks'),
    snapshotDir: path.join(dir, 'snapshots'),
    volumeDir: path.join(dir, 'volumes'),
    cgroupRoot: cgroupRootFor(name),
    idBase: ID_BASE,
    idSlots: ID_SLOTS,
    maxLifetimeMs: 600_000,
    network: ['none', 'all'],
    prepared: 0,
    preparedDisks: 0,
    // A stopped daemon releases its sandboxes: each test's end checks that nothing is left.
    liveRestore: false,
    ...settings,
  };
  fs.writeFileSync(path.join(dir, 'mayurad.json'), JSON.stringify(config));
  const child: ChildProcess = spawn(MAYURAD, ['--config', path.join(dir, 'mayurad.json')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  for (let i = 0; i < 400 && !(await answers(socket)); ++i) {
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  if (!(await answers(socket))) {
    child.kill('SIGKILL');
    throw new Error(`mayurad (${MAYURAD}) did not start: ${stderr}`);
  }
  return {
    socket,
    dir,
    async stop() {
      const ended = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      await ended;
      await checkNothingLeft(config.cgroupRoot, name, dir);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

function processesInRange(): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = fs.readFileSync(`/proc/${entry}/status`, 'utf8');
      const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
      if (uid >= ID_BASE && uid < ID_BASE + ID_SLOTS * 65536) found.push(Number(entry));
    } catch {
      // it ended while we looked
    }
  }
  return found;
}

// The loop devices bound to a file under `dir` (a disk's, a volume's).
function loopsBoundUnder(dir: string): string[] {
  const bound: string[] = [];
  for (const device of fs.readdirSync('/sys/block').filter((d) => d.startsWith('loop'))) {
    try {
      const file = fs.readFileSync(`/sys/block/${device}/loop/backing_file`, 'utf8').trim();
      if (file.startsWith(`${dir}/`)) bound.push(`${device} (${file})`);
    } catch {
      // not bound
    }
  }
  return bound;
}

async function checkNothingLeft(cgroupRoot: string, name: string, dir: string): Promise<void> {
  const left: string[] = [];
  // A loop device lets go of its file a moment after its last mount goes.
  let bound = loopsBoundUnder(dir);
  for (let i = 0; i < 200 && bound.length; ++i) {
    await new Promise((r) => setTimeout(r, 50));
    bound = loopsBoundUnder(dir);
  }
  if (bound.length) left.push(`loop devices ${bound.join(' ')}`);
  // Each test deletes the volumes it makes.
  const volumes = path.join(dir, 'volumes');
  const kept = fs.existsSync(volumes)
    ? (fs.readdirSync(volumes, { recursive: true, withFileTypes: true }) as fs.Dirent[]).filter((e) => e.isFile())
    : [];
  if (kept.length) left.push(`volumes ${kept.map((e) => e.name).join(' ')}`);
  const processes = processesInRange();
  if (processes.length) left.push(`processes ${processes.join(' ')}`);
  const roots = [cgroupRoot, ...['memory', 'cpu', 'pids', 'cpu,cpuacct'].map((c) => `/sys/fs/cgroup/${c}/${name}`)];
  for (const root of roots) {
    if (!fs.existsSync(root)) continue;
    const inside = fs.readdirSync(root, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    if (inside.length) left.push(`cgroups under ${root}: ${inside.join(' ')}`);
    try {
      fs.rmdirSync(root);
    } catch {
      left.push(`the cgroup ${root} cannot be removed`);
    }
  }
  if (left.length) throw new Error(`mayurad left: ${left.join('; ')}`);
}

// A counter or gauge of the daemon's /metrics (e.g. mayura_creates_total),
// read over its Unix socket: what it has made, whoever asked.
// The reason a call failed with, or 'no failure'.
export async function reasonOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof SandboxError, `not a SandboxError: ${String(error)}`);
    return error.reason;
  }
  return 'no failure';
}

// A GET of the daemon's own, over its socket: the status and the body.
export function daemonGet(daemon: Daemon, path: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ socketPath: daemon.socket, path, headers: { host: 'mayurad' }, agent: false }, (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      })
      .on('error', reject);
  });
}

export async function metric(daemon: Daemon, name: string): Promise<number> {
  const { status, text } = await daemonGet(daemon, '/metrics');
  const found = new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
  if (status !== 200 || !found) throw new Error(`no ${name} in mayurad's /metrics (HTTP ${status})`);
  return Number(found[1]);
}

// A daemon for the tests of one describe() (with `settings` of its config
// beside the test's own), and the sandboxes they make: started before them;
// after them, the sandboxes released and the daemon stopped (which checks
// that it left nothing).
export interface SuiteDaemon {
  daemon: Daemon;
  provider: NativeSandboxProvider;
  sandbox(lifetimeMs?: number, options?: Omit<CreateOptions, 'lifetimeMs'>): Promise<NativeSandboxBackend>;
  /** Sandboxes made otherwise (a fork's), released with the suite's. */
  keep<T extends NativeSandboxBackend[]>(sandboxes: T): T;
}

export function suiteDaemon(settings: Record<string, unknown> = {}): SuiteDaemon {
  const made: NativeSandboxBackend[] = [];
  const suite: SuiteDaemon = {
    daemon: undefined as unknown as Daemon,
    provider: undefined as unknown as NativeSandboxProvider,
    async sandbox(lifetimeMs = 120_000, options = {}) {
      const s = await suite.provider.create({ ...options, lifetimeMs });
      made.push(s);
      return s;
    },
    keep(sandboxes) {
      made.push(...sandboxes);
      return sandboxes;
    },
  };
  before(async () => {
    suite.daemon = await startDaemon(settings);
    suite.provider = nativeSandboxes({ socket: suite.daemon.socket });
  });
  after(async () => {
    await Promise.all(made.map((s) => s.release()));
    await suite.daemon.stop();
  });
  return suite;
}

/** Waits `ms` milliseconds. */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A command's stdout, the command having succeeded. */
export async function run(s: SandboxBackend, script: string): Promise<string> {
  const r = await s.exec(['sh', '-c', script]);
  assert.equal(r.exitCode, 0, r.stderr);
  return r.stdout;
}

/** A sandbox file's contents as text. */
export async function text(s: SandboxBackend, path: string): Promise<string> {
  return new TextDecoder().decode(await s.readFile(path));
}
