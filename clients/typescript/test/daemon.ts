// A real mayurad for the tests, on a scratch socket with its own state, cgroup
// root and id range, and the check that it left nothing behind once it has
// stopped: no process in its id range, no cgroup under its root (cgroup2 and
// v1). (That a stopped daemon leaves no network namespace or nftables table
// is the C++ suite's DaemonTest; these tests make sandboxes with no network
// but one.)

import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

const here = path.dirname(new URL(import.meta.url).pathname);
// build-test/test -> clients/typescript -> the repository
const repository = path.resolve(here, '../../../..');

export const MAYURAD = process.env.MAYURAD ?? path.join(repository, 'build/tools/mayurad');

export interface Daemon {
  socket: string;
  dir: string;
  stop(): Promise<void>;
}

// A range of its own for each test process (test files may run at once).
const ID_SLOTS = 8;
const ID_BASE = 0x70000000 + (process.pid % 64) * ID_SLOTS * 65536;

function cgroupRootFor(name: string): string {
  if (fs.existsSync('/sys/fs/cgroup/cgroup.controllers')) return `/sys/fs/cgroup/${name}`;
  return `/sys/fs/cgroup/unified/${name}`;
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
    cgroupRoot: cgroupRootFor(name),
    idBase: ID_BASE,
    idSlots: ID_SLOTS,
    maxLifetimeMs: 600_000,
    network: ['none', 'all'],
    prepared: 0,
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
      checkNothingLeft(config.cgroupRoot, name);
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

function checkNothingLeft(cgroupRoot: string, name: string): void {
  const left: string[] = [];
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
