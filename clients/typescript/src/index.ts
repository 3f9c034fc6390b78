// @mayurajs/sandbox-native: mayura/sandbox's provider for native Linux
// sandboxes, made and run by mayurad (namespaces, cgroups, seccomp, a
// read-only root; no Docker). Each call of the contract is one request to
// the daemon; its statuses come back as the seed's reasons.

import { cancelledError, parseEndpoint, request, type Answer, type Endpoint } from './http.js';
import {
  SandboxError,
  sandboxHttpFailure,
  type CallOptions,
  type CreateOptions,
  type ExecOptions,
  type ExecResult,
  type FileEntry,
  type ForkOptions,
  type SandboxBackend,
  type SandboxErrorReason,
  type SandboxFeatures,
  type SandboxProvider,
  type Snapshot,
  type Volume,
} from './types.js';

export * from './types.js';

export interface NativeSandboxesOptions {
  /** mayurad's Unix socket; default /run/mayura/mayurad.sock. */
  socket?: string;
  /** Instead of socket: https://HOST:PORT of a remote mayurad, with `token`. */
  url?: string;
  /** The bearer token a TLS daemon knows this client by. */
  token?: string;
  /** The CA (PEM text) that signed a TLS daemon's certificate; default: the system's. */
  ca?: string;
  /** The image of a create that names none; default: the daemon's (the host image). */
  image?: string;
  /** The longest lifetime the daemon allows (its maxLifetimeMs); default 24 hours, as mayurad's. */
  maxLifetimeMs?: number;
  /** How long a call other than exec may take; default 120 s. */
  timeoutMs?: number;
}

// What mayurad's native engine supports; an operator's narrower settings
// (network kinds, lifetimes) are refused by the daemon itself.
const FEATURES: SandboxFeatures = {
  stdin: true,
  ports: true,
  desktop: false,
  pause: true,
  disk: true,
  snapshot: true,
  volumes: true,
  // diskIo: the daemon's host decides (its io controller on cgroup2).
  network: ['none', 'all', 'allow'],
};
const WORKDIR = '/workspace';
const DAY_MS = 24 * 3600 * 1000;

const REASONS: Record<string, SandboxErrorReason> = {
  INVALID_INPUT: 'invalid_input',
  INVALID_CONFIG: 'invalid_config',
  PERMISSION_DENIED: 'permission_denied',
  GONE: 'gone',
  CANCELLED: 'cancelled',
  LIMIT_REACHED: 'limit_reached',
  NOT_FOUND: 'not_found',
  UNSUPPORTED: 'unsupported',
  INTERNAL: 'internal',
};

/** A sandbox of mayurad's: the contract's calls, pause and resume, snapshots and fork. */
export interface NativeSandboxBackend extends SandboxBackend {
  /**
   * Stops every process of the sandbox at once, where it is, until resume;
   * exec and the file calls resume it first. Its lifetime runs on while it
   * is paused. Pausing a paused sandbox does nothing.
   */
  pause(options?: CallOptions): Promise<void>;
  /** Lets the processes of a paused sandbox go on as they were; on a running one it does nothing. */
  resume(options?: CallOptions): Promise<void>;
  /** Whether the sandbox is paused. */
  paused(options?: CallOptions): Promise<boolean>;
  /**
   * Copies the sandbox's disk (its working directory and /tmp) into the
   * caller's snapshot `name` (1 to 64 of A-Z a-z 0-9 . _ -, a letter or digit
   * first), replacing one of that name atomically. Its processes stand still
   * only while the disk is copied; a paused sandbox stays paused.
   * invalid_input for a sandbox created without a disk (diskMiB or
   * snapshot); limit_reached past the daemon's maxSnapshotMiBPerClient.
   */
  snapshot(name: string, options?: CallOptions): Promise<Snapshot>;
  /**
   * `count` (1 to 64) new sandboxes, each starting with a copy of this one's
   * disk as it is now, and otherwise as this one was created (image,
   * network, limits, env, labels): each with its own id, hostname, network
   * and lifetime (`lifetimeMs`, default this one's). No process is copied.
   * All are made or none; a cancellation releases them.
   */
  fork(count: number, options?: ForkOptions): Promise<NativeSandboxBackend[]>;
}

/** The provider of mayurad's sandboxes, which can be paused, snapshot and forked, and of volumes. */
export interface NativeSandboxProvider extends SandboxProvider {
  create(options: CreateOptions, context?: CallOptions): Promise<NativeSandboxBackend>;
  /** The caller's snapshots (each client has its own names), by name. */
  snapshots(options?: CallOptions): Promise<Snapshot[]>;
  /**
   * Deletes one of the caller's snapshots (a sandbox being made from it
   * meanwhile is still made); not_found if it has none of that name.
   */
  deleteSnapshot(name: string, options?: CallOptions): Promise<void>;
  /**
   * Makes the caller's volume `name` (as a snapshot's), empty, of `sizeMiB`
   * (16 to 2^24, at most the daemon's maxDiskMiB); its whole size is
   * reserved on the host. invalid_input if the caller has one of that name;
   * limit_reached past the daemon's maxVolumeMiBPerClient. A cancellation
   * while the daemon makes it deletes it.
   */
  createVolume(name: string, sizeMiB: number, options?: CallOptions): Promise<Volume>;
  /** The caller's volumes (each client has its own names), by name. */
  volumes(options?: CallOptions): Promise<Volume[]>;
  /**
   * Deletes one of the caller's volumes and its files; not_found if it has
   * none of that name, invalid_input while a sandbox has it mounted (one
   * released a moment ago may still have it: try again a moment later).
   */
  deleteVolume(name: string, options?: CallOptions): Promise<void>;
}

// Bytes cross the wire as a JSON string when they are UTF-8, else as
// {"base64": ...}.
type WireBytes = string | { base64: string };

function wireBytes(data: string | Uint8Array): WireBytes {
  if (typeof data === 'string') return new TextDecoder().decode(new TextEncoder().encode(data));  // lone surrogates made U+FFFD
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(data);
  } catch {
    return { base64: Buffer.from(data).toString('base64') };
  }
}

function malformed(what: string): SandboxError {
  return new SandboxError('internal', `mayurad's ${what} is malformed`);
}

function bytesFrom(value: unknown, what: string): Uint8Array {
  if (typeof value === 'string') return new TextEncoder().encode(value);
  if (value !== null && typeof value === 'object' && typeof (value as { base64?: unknown }).base64 === 'string') {
    return Buffer.from((value as { base64: string }).base64, 'base64');
  }
  throw malformed(what);
}

function textFrom(value: unknown, what: string): string {
  return typeof value === 'string' ? value : new TextDecoder().decode(bytesFrom(value, what));
}

function parseJson(body: Buffer | string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
  } catch {
    throw malformed(what);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw malformed(what);
  return value as Record<string, unknown>;
}

function wireMap(map: Record<string, string> | undefined): Record<string, WireBytes> | undefined {
  if (!map) return undefined;
  const out: Record<string, WireBytes> = {};
  for (const [k, v] of Object.entries(map)) out[k] = wireBytes(v);
  return out;
}

function createBody(options: CreateOptions, image: string | undefined): string {
  const network = options.network ?? 'none';
  const body: Record<string, unknown> = {
    lifetimeMs: options.lifetimeMs,
    network: typeof network === 'string' ? network : { allow: network.allow },
  };
  if (options.env) body.env = wireMap(options.env);
  if (options.ports?.length) body.ports = options.ports;
  if (options.cpus !== undefined) body.cpus = options.cpus;
  if (options.memoryMiB !== undefined) body.memoryMiB = options.memoryMiB;
  if (options.diskMiB !== undefined) body.diskMiB = options.diskMiB;
  if (options.snapshot !== undefined) body.snapshot = options.snapshot;
  if (options.writableRoot) body.writableRoot = true;
  if (options.volumes?.length) {
    body.volumes = options.volumes.map((v) => {
      const mount: Record<string, unknown> = { name: v.name, path: wireBytes(v.path) };
      if (v.readOnly !== undefined) mount.readOnly = v.readOnly;
      return mount;
    });
  }
  if (options.diskIo) {
    const io: Record<string, number> = {};
    for (const key of ['readBps', 'writeBps', 'readIops', 'writeIops'] as const) {
      const value = options.diskIo[key];
      if (value !== undefined) io[key] = value;
    }
    body.diskIo = io;
  }
  const chosen = options.image ?? image;
  if (chosen) body.image = chosen;
  if (options.labels) body.labels = wireMap(options.labels);
  return JSON.stringify(body);
}

// What the daemon keeps of each stream for a result (its limit), which the
// client keeps of what was streamed.
const MAX_OUTPUT_BYTES = 16 * 1024 * 1024;

// The output of each stream as the lines before the result carried it, up to
// MAX_OUTPUT_BYTES: the result line itself carries none.
class KeptOutput {
  private readonly chunks: Uint8Array[] = [];
  private bytes = 0;
  clipped = false;

  add(data: Uint8Array): void {
    const room = MAX_OUTPUT_BYTES - this.bytes;
    if (data.length > room) this.clipped = true;
    const kept = data.length > room ? data.subarray(0, Math.max(room, 0)) : data;
    if (kept.length === 0) return;
    this.chunks.push(kept);
    this.bytes += kept.length;
  }

  text(): string {
    return new TextDecoder().decode(Buffer.concat(this.chunks));
  }
}

function execResultFrom(event: Record<string, unknown>, out: KeptOutput, err: KeptOutput): ExecResult {
  const { exitCode, stdout, stderr, truncated, durationMs, timedOut } = event;
  if ((exitCode !== null && !Number.isInteger(exitCode)) || typeof truncated !== 'boolean' || typeof timedOut !== 'boolean' ||
      typeof durationMs !== 'number') {
    throw malformed('exec result');
  }
  return {
    exitCode: exitCode as number | null,
    stdout: stdout === undefined ? out.text() : textFrom(stdout, 'exec result'),
    stderr: stderr === undefined ? err.text() : textFrom(stderr, 'exec result'),
    truncated: truncated || out.clipped || err.clipped,
    durationMs,
    timedOut,
  };
}

// A failure line of an exec's stream, or an error answer's body: the reason
// it names, in our words (never the daemon's message).
function failureFrom(event: Record<string, unknown>, status: number): SandboxError {
  const reason = typeof event.reason === 'string' ? REASONS[event.reason] : undefined;
  if (!reason) return sandboxHttpFailure(status);
  return new SandboxError(reason, status === 200 ? `the command failed (${reason})` : `the provider answered HTTP ${status}`);
}

// An error answer: the reason its body names, else its status's.
function failureOf(answer: Answer): SandboxError {
  try {
    return failureFrom(parseJson(answer.body, 'answer'), answer.status);
  } catch {
    return sandboxHttpFailure(answer.status);  // a body not of mayurad's shape: the status says it
  }
}

function snapshotFrom(value: unknown): Snapshot {
  const s = value as Record<string, unknown> | null;
  if (!s || typeof s !== 'object' || typeof s.name !== 'string' || !Number.isInteger(s.diskMiB) ||
      !Number.isInteger(s.storedBytes) || !Number.isInteger(s.createdAt)) {
    throw malformed('snapshot');
  }
  return { name: s.name, diskMiB: s.diskMiB as number, storedBytes: s.storedBytes as number, createdAt: s.createdAt as number };
}

function volumeFrom(value: unknown): Volume {
  const v = value as Record<string, unknown> | null;
  if (!v || typeof v !== 'object' || typeof v.name !== 'string' || !Number.isInteger(v.sizeMiB) ||
      !Number.isInteger(v.createdAt) || typeof v.inUse !== 'boolean') {
    throw malformed('volume');
  }
  return { name: v.name, sizeMiB: v.sizeMiB as number, createdAt: v.createdAt as number, inUse: v.inUse };
}

class NativeSandbox implements NativeSandboxBackend {
  private ended = false;
  private readonly base: string;

  constructor(private readonly link: Link, readonly id: string) {
    this.base = `/v1/sandboxes/${encodeURIComponent(id)}`;
  }

  async exec(argv: string[], options: ExecOptions = {}): Promise<ExecResult> {
    const body: Record<string, unknown> = { argv: argv.map(wireBytes) };
    if (options.cwd !== undefined) body.cwd = wireBytes(options.cwd);
    if (options.env) body.env = wireMap(options.env);
    if (options.timeoutMs !== undefined) body.timeoutMs = options.timeoutMs;
    if (options.stdin !== undefined) body.stdin = wireBytes(options.stdin);
    let pending = '';
    let result: ExecResult | undefined;
    let failed: SandboxError | undefined;
    const out = new KeptOutput();
    const err = new KeptOutput();
    const decoder = new TextDecoder();
    const line = (text: string) => {
      if (text === '') return;
      const event = parseJson(text, 'exec stream');
      if ('stream' in event) {
        if (event.stream === 'stdout') out.add(bytesFrom(event.data, 'exec output'));
        else if (event.stream === 'stderr') err.add(bytesFrom(event.data, 'exec output'));
        else throw malformed('exec stream');
        return;
      }
      if ('reason' in event) failed = failureFrom(event, 200);
      else result = execResultFrom(event, out, err);
    };
    const answer = await this.link.call({
      method: 'POST',
      path: `${this.base}/exec`,
      body: JSON.stringify(body),
      signal: options.signal,
      onData: (chunk) => {
        pending += decoder.decode(chunk, { stream: true });
        let nl: number;
        while ((nl = pending.indexOf('\n')) >= 0) {
          line(pending.slice(0, nl));
          pending = pending.slice(nl + 1);
        }
      },
    }, { exec: true });
    if (answer.cancelled || options.signal?.aborted) throw cancelledError();
    this.check(answer);
    line(pending);
    if (failed) {
      if (failed.reason === 'gone') this.ended = true;
      throw failed;
    }
    if (!result)
      throw new SandboxError(
        'internal',
        "mayurad's exec stream ended with no result (mayurad stopped or restarted); the command's end is unknown",
      );
    return result;
  }

  async readFile(path: string, options: CallOptions = {}): Promise<Uint8Array> {
    const answer = await this.link.call({ method: 'GET', path: `${this.base}/files?${new URLSearchParams({ path })}`, signal: options.signal });
    this.check(answer);
    return new Uint8Array(answer.body.buffer, answer.body.byteOffset, answer.body.length);
  }

  async writeFile(path: string, data: string | Uint8Array, options: CallOptions = {}): Promise<void> {
    const answer = await this.link.call({
      method: 'PUT',
      path: `${this.base}/files?${new URLSearchParams({ path })}`,
      body: data,
      contentType: 'application/octet-stream',
      signal: options.signal,
    });
    this.check(answer);
  }

  async list(path: string, options: CallOptions = {}): Promise<FileEntry[]> {
    const answer = await this.link.call({ method: 'GET', path: `${this.base}/list?${new URLSearchParams({ path })}`, signal: options.signal });
    this.check(answer);
    const entries = parseJson(answer.body, 'listing').entries;
    if (!Array.isArray(entries)) throw malformed('listing');
    return entries.map((e: unknown) => {
      const entry = e as Record<string, unknown> | null;
      if (!entry || typeof entry !== 'object' || typeof entry.size !== 'number' ||
          !['file', 'directory', 'symlink', 'other'].includes(entry.type as string)) {
        throw malformed('listing');
      }
      return { name: textFrom(entry.name, 'listing'), type: entry.type as FileEntry['type'], size: entry.size };
    });
  }

  async remove(path: string, options: CallOptions = {}): Promise<void> {
    const answer = await this.link.call({ method: 'DELETE', path: `${this.base}/files?${new URLSearchParams({ path })}`, signal: options.signal });
    this.check(answer);
  }

  async url(port: number): Promise<string> {
    const answer = await this.link.call({ method: 'GET', path: `${this.base}/url?${new URLSearchParams({ port: String(port) })}` });
    this.check(answer);
    const url = parseJson(answer.body, 'url').url;
    if (typeof url !== 'string') throw malformed('url');
    return url;
  }

  async pause(options: CallOptions = {}): Promise<void> {
    const answer = await this.link.call({ method: 'POST', path: `${this.base}/pause`, signal: options.signal });
    this.check(answer);
  }

  async resume(options: CallOptions = {}): Promise<void> {
    const answer = await this.link.call({ method: 'POST', path: `${this.base}/resume`, signal: options.signal });
    this.check(answer);
  }

  async paused(options: CallOptions = {}): Promise<boolean> {
    const answer = await this.link.call({ method: 'GET', path: this.base, signal: options.signal });
    this.check(answer);
    const paused = parseJson(answer.body, 'sandbox').paused;
    if (typeof paused !== 'boolean') throw malformed('sandbox');
    return paused;
  }

  async snapshot(name: string, options: CallOptions = {}): Promise<Snapshot> {
    const answer = await this.link.call({
      method: 'POST',
      path: `${this.base}/snapshot`,
      body: JSON.stringify({ name }),
      signal: options.signal,
    });
    this.check(answer);
    return snapshotFrom(parseJson(answer.body, 'snapshot'));
  }

  async fork(count: number, options: ForkOptions = {}): Promise<NativeSandboxBackend[]> {
    if (options.signal?.aborted) throw cancelledError();
    const body: Record<string, unknown> = { count };
    if (options.lifetimeMs !== undefined) body.lifetimeMs = options.lifetimeMs;
    // As a create: a cancellation while the daemon forks does not cut the
    // call short (only its answer has the ids to release the new ones by).
    const answer = await this.link.call({ method: 'POST', path: `${this.base}/fork`, body: JSON.stringify(body) });
    this.check(answer);
    const listed = parseJson(answer.body, 'fork').sandboxes;
    const made: NativeSandbox[] = [];
    for (const s of Array.isArray(listed) ? listed : []) {
      const id = (s as { id?: unknown } | null)?.id;
      if (typeof id === 'string' && id !== '') made.push(new NativeSandbox(this.link, id));
    }
    if (!Array.isArray(listed) || made.length !== listed.length || made.length !== count) {
      await Promise.all(made.map((m) => m.release()));
      throw malformed('fork');
    }
    if (options.signal?.aborted) {
      await Promise.all(made.map((m) => m.release()));
      throw cancelledError();
    }
    return made;
  }

  async release(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    try {
      await this.link.call({ method: 'DELETE', path: this.base });
    } catch {
      // the daemon ends it at its lifetime, or is gone and took it along
    }
  }

  private check(answer: Answer): void {
    if (answer.status >= 200 && answer.status < 300) return;
    const error = failureOf(answer);
    if (error.reason === 'gone') this.ended = true;
    throw error;
  }
}

class Link {
  constructor(readonly endpoint: Endpoint, private readonly timeoutMs: number) {}
  call(c: Parameters<typeof request>[1], how: { exec?: boolean } = {}): Promise<Answer> {
    return request(this.endpoint, how.exec ? c : { ...c, timeoutMs: this.timeoutMs });
  }
}

class NativeProvider implements NativeSandboxProvider {
  readonly id: string;
  readonly features = FEATURES;
  readonly workdir = WORKDIR;
  readonly maxLifetimeMs: number;
  private readonly link: Link;
  private readonly image: string | undefined;

  constructor(options: NativeSandboxesOptions) {
    const endpoint = parseEndpoint(options);
    this.link = new Link(endpoint, options.timeoutMs ?? 120_000);
    this.id = `native:${endpoint.text}`;
    this.maxLifetimeMs = options.maxLifetimeMs ?? DAY_MS;
    this.image = options.image;
  }

  async create(options: CreateOptions, context: CallOptions = {}): Promise<NativeSandboxBackend> {
    if (context.signal?.aborted) throw cancelledError();
    // A cancellation while the daemon creates does not cut the call short:
    // the daemon would make the sandbox anyway, and only its answer has the
    // id to release it by.
    const answer = await this.link.call({ method: 'POST', path: '/v1/sandboxes', body: createBody(options, this.image) });
    if (answer.status !== 201) throw failureOf(answer);
    const id = parseJson(answer.body, 'created sandbox').id;
    if (typeof id !== 'string' || id === '') throw malformed('created sandbox');
    const sandbox = new NativeSandbox(this.link, id);
    if (context.signal?.aborted) {
      await sandbox.release();
      throw cancelledError();
    }
    return sandbox;
  }

  async snapshots(options: CallOptions = {}): Promise<Snapshot[]> {
    const answer = await this.link.call({ method: 'GET', path: '/v1/snapshots', signal: options.signal });
    if (answer.status !== 200) throw failureOf(answer);
    const listed = parseJson(answer.body, 'snapshots').snapshots;
    if (!Array.isArray(listed)) throw malformed('snapshots');
    return listed.map(snapshotFrom);
  }

  async deleteSnapshot(name: string, options: CallOptions = {}): Promise<void> {
    const answer = await this.link.call({
      method: 'DELETE',
      path: `/v1/snapshots/${encodeURIComponent(name)}`,
      signal: options.signal,
    });
    // 404 is a name the caller has none of, not a sandbox gone.
    if (answer.status === 404) throw new SandboxError('not_found', `there is no snapshot named ${name}`);
    if (answer.status !== 204) throw failureOf(answer);
  }

  async createVolume(name: string, sizeMiB: number, options: CallOptions = {}): Promise<Volume> {
    if (options.signal?.aborted) throw cancelledError();
    // As a create: a cancellation while the daemon makes it does not cut the
    // call short; the volume made is deleted then.
    const answer = await this.link.call({ method: 'POST', path: '/v1/volumes', body: JSON.stringify({ name, sizeMiB }) });
    if (answer.status !== 201) throw failureOf(answer);
    const made = volumeFrom(parseJson(answer.body, 'volume'));
    if (options.signal?.aborted) {
      await this.deleteVolume(made.name).catch(() => {});
      throw cancelledError();
    }
    return made;
  }

  async volumes(options: CallOptions = {}): Promise<Volume[]> {
    const answer = await this.link.call({ method: 'GET', path: '/v1/volumes', signal: options.signal });
    if (answer.status !== 200) throw failureOf(answer);
    const listed = parseJson(answer.body, 'volumes').volumes;
    if (!Array.isArray(listed)) throw malformed('volumes');
    return listed.map(volumeFrom);
  }

  async deleteVolume(name: string, options: CallOptions = {}): Promise<void> {
    const answer = await this.link.call({
      method: 'DELETE',
      path: `/v1/volumes/${encodeURIComponent(name)}`,
      signal: options.signal,
    });
    // As a snapshot's: 404 is a name the caller has none of.
    if (answer.status === 404) throw new SandboxError('not_found', `there is no volume named ${name}`);
    if (answer.status !== 204) throw failureOf(answer);
  }
}

/**
 * The provider of native sandboxes made by the mayurad at `socket` (or `url`
 * with `token`), for createSandboxes:
 *
 *   const sandboxes = createSandboxes(nativeSandboxes(), { maxSandboxes: 4, maxLifetimeMs: 600_000 });
 */
export function nativeSandboxes(options: NativeSandboxesOptions = {}): NativeSandboxProvider {
  return new NativeProvider(options);
}
