// @mayurajs/sandbox-native: mayura/sandbox's provider for native Linux
// sandboxes, made and run by mayurad (namespaces, cgroups, seccomp, a
// read-only root; no Docker). Each call of the contract is one request to
// the daemon (an attachment to a command, one WebSocket); its statuses come
// back as the seed's reasons.

import WebSocket from 'ws';

import {
  cancelledError,
  connectionFailure,
  parseEndpoint,
  refusal,
  request,
  unreachable,
  webSocket,
  type Answer,
  type Endpoint,
} from './http.js';
import {
  SandboxError,
  sandboxHttpFailure,
  type AttachOptions,
  type CallOptions,
  type ClickOptions,
  type CommandAttachment,
  type CommandInfo,
  type CommandState,
  type CreateOptions,
  type DesktopSize,
  type ExecOptions,
  type ExecResult,
  type FileEntry,
  type ForkOptions,
  type InteractiveAttachOptions,
  type OutputOptions,
  type OutputSlice,
  type Point,
  type SandboxBackend,
  type SandboxErrorReason,
  type NetworkKind,
  type SandboxFeatures,
  type SandboxProvider,
  type ScreenshotOptions,
  type ScrollDirection,
  type ScrollOptions,
  type Snapshot,
  type StartOptions,
  type TerminalSize,
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
  desktop: true,
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

/** A sandbox of mayurad's: the contract's calls, pause and resume, snapshots and fork, the desktop. */
export interface NativeSandboxBackend extends SandboxBackend {
  /**
   * The screen of a sandbox created with a desktop (CreateOptions.desktop),
   * as the daemon made it; undefined for one created without.
   */
  readonly desktopSize: DesktopSize | undefined;
  /**
   * The screen, or a region of it (on the screen whole), as PNG bytes.
   * Like every desktop call: checked here before any request (a sandbox
   * without a desktop, a point or region off its screen, a count, amount,
   * button or direction out of range, and empty, overlong or ill-formed
   * text fail invalid_input), and done when it resolves (the X server has
   * handled its events). A paused sandbox is resumed first. If a command
   * killed the X server, or a program holds it grabbed, it fails internal
   * (after 10 s for the latter); the sandbox lives on.
   */
  screenshot(options?: ScreenshotOptions): Promise<Uint8Array>;
  /** Where the pointer is. */
  cursorPosition(options?: CallOptions): Promise<Point>;
  /** Moves the pointer to a point of the screen. */
  move(to: Point, options?: CallOptions): Promise<void>;
  /** Clicks at a point with `button` (default left), `count` times (1 to 3; 2 is a double click). */
  click(at: Point, options?: ClickOptions): Promise<void>;
  /** Presses the left button at the first point, holds it through the rest, releases it at the last (2 to 1000 points). */
  drag(path: Point[], options?: CallOptions): Promise<void>;
  /** Turns the wheel at a point, `amount` steps (1 to 100, default 1) in a direction. */
  scroll(at: Point, direction: ScrollDirection, options?: ScrollOptions): Promise<void>;
  /**
   * Types text, up to 64 KiB of UTF-8: a newline is Return, and a character
   * no key of the layout gives gets a spare key of its own.
   */
  type(text: string, options?: CallOptions): Promise<void>;
  /**
   * Presses keys by xdotool's names (`ctrl+s`, `Return`, `alt+Tab`): several
   * combinations, separated by spaces, one after the other. A name the
   * daemon does not know fails invalid_input.
   */
  key(keys: string, options?: CallOptions): Promise<void>;

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

  /**
   * Starts a command left running in the sandbox and returns at once: a dev
   * server, a watcher, a REPL. mayurad holds it, its output (the newest
   * keepBytes of each stream) and its end, for any later call of this
   * client's, whatever becomes of this process. It ends by itself, at its
   * timeout, by stop, or with the sandbox; checked as exec is.
   * limit_reached past 32 running in the sandbox.
   */
  start(argv: string[], options?: StartOptions): Promise<CommandInfo>;
  /** Every command the sandbox holds, in the order they started. */
  commands(options?: CallOptions): Promise<CommandInfo[]>;
  /** One command; not_found for an id the sandbox does not hold. */
  command(id: string, options?: CallOptions): Promise<CommandInfo>;
  /** What is held of one stream from an offset on, at once. */
  output(id: string, options?: OutputOptions): Promise<OutputSlice>;
  /**
   * What is held from the given offsets, then the output as the command
   * prints it (over one WebSocket, which the daemon writes to as output
   * comes), until the command has ended and all of it was given (or,
   * without follow, what was held as it started; or at timeoutMs, the
   * command as it is then): the command then. Aborting ends the
   * attachment, not the command, and fails cancelled. An unknown command
   * fails not_found at once.
   */
  attach(id: string, options?: AttachOptions): Promise<CommandInfo>;
  /**
   * As attach, and the command's input, signals, terminal size and stop
   * over the same connection: a host drives a terminal or a REPL with no
   * request per keystroke. Resolves once the daemon has taken the
   * attachment (an unknown command fails not_found, as attach); its `done`
   * is what attach would resolve to. A failure of `done` that the caller
   * never awaits is no unhandled rejection: each later call fails too.
   */
  attachInteractive(id: string, options?: InteractiveAttachOptions): Promise<CommandAttachment>;
  /** Writes to its input, in order; invalid_input once it has ended. */
  writeInput(id: string, data: string | Uint8Array, options?: CallOptions): Promise<void>;
  /** Ends its input. */
  closeInput(id: string, options?: CallOptions): Promise<void>;
  /** `signal` (1 to 64) to its process group. */
  signal(id: string, signal: number, options?: CallOptions): Promise<void>;
  /** A terminal command's new size (its foreground job gets SIGWINCH). */
  resize(id: string, size: TerminalSize, options?: CallOptions): Promise<void>;
  /** Stops it with everything it started; the command once it has ended. */
  stop(id: string, options?: CallOptions): Promise<CommandInfo>;
  /** The command once it has ended, or at timeoutMs (still running then). */
  wait(id: string, options?: CallOptions & { timeoutMs?: number }): Promise<CommandInfo>;
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

// The desktop's bounds, as mayurad's (and the C++ library's) own.
const MIN_SCREEN_SIDE = 64;
const MAX_SCREEN_WIDTH = 3840;
const MAX_SCREEN_HEIGHT = 2160;
const MAX_DESKTOP_TEXT_BYTES = 64 * 1024;
const MAX_DRAG_POINTS = 1000;
const MOUSE_BUTTONS: readonly string[] = ['left', 'middle', 'right'];
const SCROLL_DIRECTIONS: readonly string[] = ['up', 'down', 'left', 'right'];
const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
// A UTF-16 surrogate with no partner: a string no UTF-8 can carry.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function invalidInput(message: string): SandboxError {
  return new SandboxError('invalid_input', message);
}

// What a create sends for its desktop option: nothing, true, or a size in bounds.
function wireDesktop(desktop: unknown): DesktopSize | true | undefined {
  if (desktop === undefined || desktop === false) return undefined;
  if (desktop === true) return true;
  const size = desktop as { width?: unknown; height?: unknown } | null;
  if (size === null || typeof size !== 'object') throw invalidInput('desktop is true, false or { width, height }');
  const { width, height } = size;
  if (!Number.isInteger(width) || !Number.isInteger(height) || (width as number) < MIN_SCREEN_SIDE ||
      (height as number) < MIN_SCREEN_SIDE || (width as number) > MAX_SCREEN_WIDTH || (height as number) > MAX_SCREEN_HEIGHT) {
    throw invalidInput(
      `a desktop is ${MIN_SCREEN_SIDE}x${MIN_SCREEN_SIDE} to ${MAX_SCREEN_WIDTH}x${MAX_SCREEN_HEIGHT}, not ${String(width)}x${String(height)}`,
    );
  }
  return { width: width as number, height: height as number };
}

// A sandbox's screen as the daemon says it: none, or a size.
function desktopFrom(value: unknown): DesktopSize | undefined {
  if (value === undefined) return undefined;
  const size = value as { width?: unknown; height?: unknown } | null;
  if (!size || typeof size !== 'object' || !Number.isInteger(size.width) || !Number.isInteger(size.height) ||
      (size.width as number) <= 0 || (size.height as number) <= 0) {
    throw malformed('sandbox');
  }
  return { width: size.width as number, height: size.height as number };
}

function pointOn(p: unknown, screen: DesktopSize): Point {
  const point = p as { x?: unknown; y?: unknown } | null;
  if (!point || typeof point !== 'object' || !Number.isInteger(point.x) || !Number.isInteger(point.y)) {
    throw invalidInput('a point is { x, y }, whole numbers');
  }
  const x = point.x as number;
  const y = point.y as number;
  if (x < 0 || y < 0 || x >= screen.width || y >= screen.height) {
    throw invalidInput(`(${x}, ${y}) is outside the screen (${screen.width}x${screen.height})`);
  }
  return { x, y };
}

// A whole number from `least` to `most`, or the default when absent.
function countIn(value: unknown, least: number, most: number, fallback: number, what: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || (value as number) < least || (value as number) > most) {
    throw invalidInput(`${what} is ${least} to ${most}, not ${String(value)}`);
  }
  return value as number;
}

function desktopText(text: unknown, kind: 'type' | 'key'): string {
  if (typeof text !== 'string' || text === '') throw invalidInput(kind === 'type' ? 'no text to type' : 'no key to press');
  if (LONE_SURROGATE.test(text)) throw invalidInput('the text has a lone surrogate: it is no UTF-8');
  if (Buffer.byteLength(text, 'utf8') > MAX_DESKTOP_TEXT_BYTES) {
    throw invalidInput(`more than ${MAX_DESKTOP_TEXT_BYTES} bytes to type or press at once`);
  }
  return text;
}

function createBody(options: CreateOptions, image: string | undefined): string {
  const desktop = wireDesktop(options.desktop);
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
  if (desktop !== undefined) body.desktop = desktop;
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

const COMMAND_STATES: readonly CommandState[] = ['running', 'exited', 'timedOut', 'stopped', 'failed'];
// The longest a wait holds one request (the daemon's bound): a longer one asks again.
const MOST_WAIT_MS = 60_000;

function commandFrom(value: unknown): CommandInfo {
  const c = value as Record<string, unknown> | null;
  if (!c || typeof c !== 'object' || typeof c.id !== 'string' || !Array.isArray(c.argv) ||
      !COMMAND_STATES.includes(c.state as CommandState) || (c.exitCode !== null && !Number.isInteger(c.exitCode)) ||
      !Number.isInteger(c.startedAt) || (c.endedAt !== null && !Number.isInteger(c.endedAt)) ||
      typeof c.terminal !== 'boolean' || !Number.isInteger(c.stdoutBytes) || !Number.isInteger(c.stderrBytes)) {
    throw malformed('command');
  }
  const info: CommandInfo = {
    id: c.id,
    argv: c.argv.map((a) => textFrom(a, 'command')),
    state: c.state as CommandState,
    exitCode: c.exitCode as number | null,
    startedAt: c.startedAt as number,
    endedAt: c.endedAt as number | null,
    terminal: c.terminal,
    stdoutBytes: c.stdoutBytes as number,
    stderrBytes: c.stderrBytes as number,
  };
  if (c.error !== undefined) info.error = textFrom(c.error, 'command');
  return info;
}

function sliceFrom(value: Record<string, unknown>): OutputSlice {
  const { offset, dropped, next } = value;
  if (!Number.isInteger(offset) || !Number.isInteger(dropped) || !Number.isInteger(next)) throw malformed('output');
  const data = bytesFrom(value.data, 'output');
  if ((next as number) !== (offset as number) + data.length) throw malformed('output');
  return { offset: offset as number, dropped: dropped as number, data, next: next as number };
}

// The most one message of the client's to an attachment holds (the
// daemon's bound): a longer write goes in pieces.
const MOST_ATTACH_MESSAGE = 1 << 20;
// Input written and not yet handed to the connection past which a write
// fails, as the C++ client's.
const MOST_UNSENT_INPUT = 1 << 20;
const MOST_SIGNAL = 64;
const MOST_TERMINAL_SIDE = 1000;
// An attachment's output message: its first byte.
const STREAM_TAGS: Record<number, 'stdout' | 'stderr'> = { 1: 'stdout', 2: 'stderr' };

// What an attachment asks of its sandbox.
interface AttachmentHost {
  endpoint: Endpoint;
  /** The bound on the handshake, as on a call. */
  timeoutMs: number;
  /** The command as it is now (an attachment ended early gives that). */
  command(): Promise<CommandInfo>;
  /** A failure of the sandbox's (one that says it is gone is noted). */
  failed(error: SandboxError): SandboxError;
}

// One attachment to a command (attach, attachInteractive): its connection
// from the handshake to the close, and its outcome. A client's end (close,
// timeoutMs, an abort) cuts the connection: the daemon leaves the command
// running when its client goes.
class Attachment implements CommandAttachment {
  readonly done: Promise<CommandInfo>;
  /** Resolves once the daemon has upgraded the connection (never, if it ends before). */
  readonly opened: Promise<void>;
  private readonly ws: WebSocket | undefined;
  private ending: 'closed' | 'timedOut' | 'cancelled' | undefined;
  private settled = false;
  // The daemon's last failure event, and what failed here (the connection, the handshake's bound).
  private failure: SandboxError | undefined;
  private broken: SandboxError | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  private resolve!: (info: CommandInfo) => void;
  private reject!: (error: unknown) => void;
  private markOpen!: () => void;

  constructor(private readonly host: AttachmentHost, path: string, private readonly options: InteractiveAttachOptions) {
    this.done = new Promise<CommandInfo>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    this.opened = new Promise<void>((resolve) => (this.markOpen = resolve));
    if (options.signal?.aborted) {
      this.finish({ error: cancelledError() });
      return;
    }
    const ws = webSocket(host.endpoint, path);
    this.ws = ws;
    const handshake = setTimeout(() => {
      this.broken ??= unreachable(host.endpoint, `no answer within ${host.timeoutMs} ms`);
      ws.terminate();
    }, host.timeoutMs);
    this.timers.push(handshake);
    if (options.timeoutMs !== undefined) this.timers.push(setTimeout(() => this.end('timedOut'), options.timeoutMs));
    options.signal?.addEventListener('abort', this.onAbort, { once: true });
    ws.on('open', () => {
      clearTimeout(handshake);
      this.markOpen();
    });
    ws.on('unexpected-response', (_req, res) => {
      clearTimeout(handshake);
      void refusal(res).then((answer) => {
        this.finish({ error: this.host.failed(failureOf(answer)) });
        ws.terminate();
      });
    });
    ws.on('message', (data, binary) => {
      if (this.settled || this.ending) return;
      try {
        this.take(data as Buffer, binary);
      } catch (error) {
        // A malformed message, or a callback that threw: the attachment ends with it.
        this.finish({ error });
        ws.terminate();
      }
    });
    ws.on('error', (error) => {
      this.broken ??= connectionFailure(host.endpoint, error);
    });
    ws.on('close', () => this.closed());
  }

  async write(data: string | Uint8Array): Promise<void> {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    const ws = this.usable();
    if (bytes.length === 0) return;
    const unsent = ws.bufferedAmount;
    if (unsent > 0 && unsent + bytes.length > MOST_UNSENT_INPUT) {
      throw new SandboxError('limit_reached', `more than ${MOST_UNSENT_INPUT} bytes of input not sent yet (await each write)`);
    }
    const pieces: Promise<void>[] = [];
    for (let at = 0; at < bytes.length; at += MOST_ATTACH_MESSAGE) {
      pieces.push(this.send(ws, bytes.subarray(at, at + MOST_ATTACH_MESSAGE)));
    }
    await Promise.all(pieces);
  }

  async closeInput(): Promise<void> {
    await this.send(this.usable(), JSON.stringify({ closeInput: true }));
  }

  async signal(signal: number): Promise<void> {
    if (!Number.isInteger(signal) || signal < 1 || signal > MOST_SIGNAL) {
      throw invalidInput(`a signal is 1 to ${MOST_SIGNAL}, not ${String(signal)}`);
    }
    await this.send(this.usable(), JSON.stringify({ signal }));
  }

  async resize(size: TerminalSize): Promise<void> {
    const { rows, columns } = (size ?? {}) as { rows?: unknown; columns?: unknown };
    if (![rows, columns].every((n) => Number.isInteger(n) && (n as number) >= 1 && (n as number) <= MOST_TERMINAL_SIDE)) {
      throw invalidInput(`a terminal is 1 to ${MOST_TERMINAL_SIDE} rows and columns, not ${String(rows)}x${String(columns)}`);
    }
    await this.send(this.usable(), JSON.stringify({ resize: { rows, columns } }));
  }

  async stop(): Promise<CommandInfo> {
    await this.send(this.usable(), JSON.stringify({ stop: true }));
    return this.done;
  }

  close(): Promise<CommandInfo> {
    this.end('closed');
    return this.done;
  }

  private readonly onAbort = () => this.end('cancelled');

  // The client's end of the attachment; its outcome comes with the close.
  private end(why: 'closed' | 'timedOut' | 'cancelled'): void {
    if (this.settled || this.ending) return;
    this.ending = why;
    this.ws?.terminate();
  }

  private usable(): WebSocket {
    if (!this.ws || this.settled || this.ending || this.ws.readyState !== WebSocket.OPEN) {
      throw invalidInput('the attachment has ended');
    }
    return this.ws;
  }

  private send(ws: WebSocket, data: Buffer | string): Promise<void> {
    return new Promise((resolve, reject) => {
      ws.send(data, { binary: typeof data !== 'string' }, (error) => {
        if (error) reject(new SandboxError('internal', 'the attachment ended before the message was sent'));
        else resolve();
      });
    });
  }

  // One message of the daemon's.
  private take(data: Buffer, binary: boolean): void {
    if (binary) {
      const stream = STREAM_TAGS[data[0] ?? 0];
      if (!stream) throw malformed('attachment output');
      const bytes = new Uint8Array(data.buffer, data.byteOffset + 1, data.length - 1);
      (stream === 'stdout' ? this.options.onStdout : this.options.onStderr)?.(bytes);
      return;
    }
    const event = parseJson(data, 'attachment event');
    if ('command' in event) {
      // The last message: the daemon closes next.
      this.finish({ info: commandFrom(event.command) });
    } else if ('dropped' in event) {
      const { stream, bytes } = (event.dropped ?? {}) as { stream?: unknown; bytes?: unknown };
      if ((stream !== 'stdout' && stream !== 'stderr') || !Number.isInteger(bytes)) throw malformed('attachment event');
      this.options.onDropped?.(stream, bytes as number);
    } else if ('reason' in event) {
      const reason = (typeof event.reason === 'string' ? REASONS[event.reason] : undefined) ?? 'internal';
      this.failure = new SandboxError(reason, `the attachment failed (${reason})`);
      this.options.onRefused?.(new SandboxError(reason, `mayurad refused a message of the attachment (${reason})`));
    }
    // (an event a newer daemon sends and this provider does not know is passed over)
  }

  private closed(): void {
    if (this.settled) return;
    if (this.ending === 'cancelled') this.finish({ error: cancelledError() });
    else if (this.ending) this.host.command().then((info) => this.finish({ info }), (error: unknown) => this.finish({ error }));
    else if (this.failure) this.finish({ error: this.host.failed(this.failure) });
    else if (this.broken) this.finish({ error: this.broken });
    else {
      this.finish({
        error: new SandboxError(
          'internal',
          `mayurad at ${this.host.endpoint.text} closed the attachment without the command's state (mayurad stopped or restarted)`,
        ),
      });
    }
  }

  private finish(outcome: { info: CommandInfo } | { error: unknown }): void {
    if (this.settled) return;
    this.settled = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.options.signal?.removeEventListener('abort', this.onAbort);
    if ('info' in outcome) this.resolve(outcome.info);
    else this.reject(outcome.error);
  }
}

class NativeSandbox implements NativeSandboxBackend {
  private ended = false;
  private readonly base: string;

  constructor(private readonly link: Link, readonly id: string, readonly desktopSize: DesktopSize | undefined) {
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
        const data = bytesFrom(event.data, 'exec output');
        if (event.stream === 'stdout') {
          out.add(data);
          options.onStdout?.(data);
        } else if (event.stream === 'stderr') {
          err.add(data);
          options.onStderr?.(data);
        } else {
          throw malformed('exec stream');
        }
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
    let screens = true;
    for (const s of Array.isArray(listed) ? listed : []) {
      const { id, desktop } = (s ?? {}) as { id?: unknown; desktop?: unknown };
      let screen: DesktopSize | undefined;
      try {
        screen = desktopFrom(desktop);
      } catch {
        screens = false;
      }
      if (typeof id === 'string' && id !== '') made.push(new NativeSandbox(this.link, id, screen));
    }
    if (!Array.isArray(listed) || made.length !== listed.length || made.length !== count || !screens) {
      await Promise.all(made.map((m) => m.release()));
      throw malformed('fork');
    }
    if (options.signal?.aborted) {
      await Promise.all(made.map((m) => m.release()));
      throw cancelledError();
    }
    return made;
  }

  async start(argv: string[], options: StartOptions = {}): Promise<CommandInfo> {
    const body: Record<string, unknown> = { argv: argv.map(wireBytes) };
    if (options.cwd !== undefined) body.cwd = wireBytes(options.cwd);
    if (options.env) body.env = wireMap(options.env);
    if (options.timeoutMs !== undefined) body.timeoutMs = options.timeoutMs;
    if (options.stdin !== undefined) body.stdin = wireBytes(options.stdin);
    if (options.terminal) body.terminal = { rows: options.terminal.rows, columns: options.terminal.columns };
    if (options.keepBytes !== undefined) body.keepBytes = options.keepBytes;
    const answer = await this.link.call({ method: 'POST', path: `${this.base}/commands`, body: JSON.stringify(body), signal: options.signal });
    this.check(answer);
    return commandFrom(parseJson(answer.body, 'command'));
  }

  async commands(options: CallOptions = {}): Promise<CommandInfo[]> {
    const answer = await this.link.call({ method: 'GET', path: `${this.base}/commands`, signal: options.signal });
    this.check(answer);
    const listed = parseJson(answer.body, 'commands').commands;
    if (!Array.isArray(listed)) throw malformed('commands');
    return listed.map(commandFrom);
  }

  async command(id: string, options: CallOptions = {}): Promise<CommandInfo> {
    const answer = await this.link.call({ method: 'GET', path: this.commandPath(id), signal: options.signal });
    this.check(answer);
    return commandFrom(parseJson(answer.body, 'command'));
  }

  async output(id: string, options: OutputOptions = {}): Promise<OutputSlice> {
    const query = new URLSearchParams({ stream: options.stream ?? 'stdout', from: String(options.from ?? 0) });
    if (options.maxBytes !== undefined) query.set('maxBytes', String(options.maxBytes));
    const answer = await this.link.call({ method: 'GET', path: `${this.commandPath(id)}/output?${query}`, signal: options.signal });
    this.check(answer);
    return sliceFrom(parseJson(answer.body, 'output'));
  }

  attach(id: string, options: AttachOptions = {}): Promise<CommandInfo> {
    return this.attachment(id, options).done;
  }

  async attachInteractive(id: string, options: InteractiveAttachOptions = {}): Promise<CommandAttachment> {
    const attachment = this.attachment(id, options);
    // Resolved once upgraded; a refusal, or an end before (an abort, a
    // timeoutMs within the handshake), is done's.
    await Promise.race([attachment.opened, attachment.done]);
    // A host that drives the command may never await done: its failure is
    // no crash (the attachment's calls fail from then on).
    attachment.done.catch(() => {});
    return attachment;
  }

  private attachment(id: string, options: InteractiveAttachOptions): Attachment {
    const query = new URLSearchParams({
      stdoutFrom: String(options.stdoutFrom ?? 0),
      stderrFrom: String(options.stderrFrom ?? 0),
      follow: String(options.follow ?? true),
    });
    const host: AttachmentHost = {
      endpoint: this.link.endpoint,
      timeoutMs: this.link.timeoutMs,
      command: () => this.command(id),
      failed: (error) => {
        if (error.reason === 'gone') this.ended = true;
        return error;
      },
    };
    return new Attachment(host, `${this.commandPath(id)}/attach?${query}`, options);
  }

  async writeInput(id: string, data: string | Uint8Array, options: CallOptions = {}): Promise<void> {
    await this.commandCall(id, 'input', { data: wireBytes(data) }, options);
  }

  async closeInput(id: string, options: CallOptions = {}): Promise<void> {
    await this.commandCall(id, 'input', { close: true }, options);
  }

  async signal(id: string, signal: number, options: CallOptions = {}): Promise<void> {
    await this.commandCall(id, 'signal', { signal }, options);
  }

  async resize(id: string, size: TerminalSize, options: CallOptions = {}): Promise<void> {
    await this.commandCall(id, 'resize', { rows: size.rows, columns: size.columns }, options);
  }

  async stop(id: string, options: CallOptions = {}): Promise<CommandInfo> {
    const answer = await this.commandCall(id, 'stop', undefined, options);
    return commandFrom(parseJson(answer.body, 'command'));
  }

  async wait(id: string, options: CallOptions & { timeoutMs?: number } = {}): Promise<CommandInfo> {
    const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
    // Each request within the daemon's bound and the provider's own on a call.
    const most = Math.max(0, Math.min(MOST_WAIT_MS, this.link.timeoutMs - 5_000));
    for (;;) {
      const ms = Math.max(0, Math.min(most, deadline - Date.now()));
      const answer = await this.link.call({
        method: 'GET',
        path: `${this.commandPath(id)}/wait?${new URLSearchParams({ timeoutMs: String(Math.floor(ms)) })}`,
        signal: options.signal,
      });
      if (answer.cancelled || options.signal?.aborted) throw cancelledError();
      this.check(answer);
      const info = commandFrom(parseJson(answer.body, 'command'));
      if (info.state !== 'running' || Date.now() >= deadline) return info;
    }
  }

  async screenshot(options: ScreenshotOptions = {}): Promise<Uint8Array> {
    const screen = this.screen();
    let query = '';
    if (options.region !== undefined) {
      const r = options.region as Partial<Record<'x' | 'y' | 'width' | 'height', unknown>> | null;
      if (!r || typeof r !== 'object' || ![r.x, r.y, r.width, r.height].every((v) => Number.isInteger(v))) {
        throw invalidInput('a region is { x, y, width, height }, whole numbers');
      }
      const { x, y, width, height } = r as { x: number; y: number; width: number; height: number };
      if (x < 0 || y < 0 || width <= 0 || height <= 0 || x + width > screen.width || y + height > screen.height) {
        throw invalidInput(`the region ${width}x${height} at (${x}, ${y}) is not on the screen (${screen.width}x${screen.height})`);
      }
      query = `?${new URLSearchParams({ x: String(x), y: String(y), width: String(width), height: String(height) })}`;
    }
    const answer = await this.link.call({ method: 'GET', path: `${this.base}/desktop/screenshot${query}`, signal: options.signal });
    this.check(answer);
    if (answer.body.length < PNG_SIGNATURE.length || PNG_SIGNATURE.some((b, i) => answer.body[i] !== b)) throw malformed('screenshot');
    return new Uint8Array(answer.body.buffer, answer.body.byteOffset, answer.body.length);
  }

  async cursorPosition(options: CallOptions = {}): Promise<Point> {
    this.screen();
    const answer = await this.link.call({ method: 'GET', path: `${this.base}/desktop/cursor`, signal: options.signal });
    this.check(answer);
    const { x, y } = parseJson(answer.body, 'cursor');
    if (!Number.isInteger(x) || !Number.isInteger(y)) throw malformed('cursor');
    return { x: x as number, y: y as number };
  }

  async move(to: Point, options: CallOptions = {}): Promise<void> {
    await this.input({ action: 'move', at: pointOn(to, this.screen()) }, options);
  }

  async click(at: Point, options: ClickOptions = {}): Promise<void> {
    const point = pointOn(at, this.screen());
    const count = countIn(options.count, 1, 3, 1, 'a click count');
    const button = options.button ?? 'left';
    if (!MOUSE_BUTTONS.includes(button)) throw invalidInput(`a mouse button is left, middle or right, not ${String(button)}`);
    await this.input({ action: 'click', at: point, button, count }, options);
  }

  async drag(path: Point[], options: CallOptions = {}): Promise<void> {
    const screen = this.screen();
    if (!Array.isArray(path) || path.length < 2 || path.length > MAX_DRAG_POINTS) {
      throw invalidInput(`a drag goes through 2 to ${MAX_DRAG_POINTS} points`);
    }
    await this.input({ action: 'drag', path: path.map((p) => pointOn(p, screen)) }, options);
  }

  async scroll(at: Point, direction: ScrollDirection, options: ScrollOptions = {}): Promise<void> {
    const point = pointOn(at, this.screen());
    if (!SCROLL_DIRECTIONS.includes(direction)) {
      throw invalidInput(`a scroll's direction is up, down, left or right, not ${String(direction)}`);
    }
    const amount = countIn(options.amount, 1, 100, 1, "a scroll's amount");
    await this.input({ action: 'scroll', at: point, direction, amount }, options);
  }

  async type(text: string, options: CallOptions = {}): Promise<void> {
    this.screen();
    await this.input({ action: 'type', text: desktopText(text, 'type') }, options);
  }

  async key(keys: string, options: CallOptions = {}): Promise<void> {
    this.screen();
    await this.input({ action: 'key', text: desktopText(keys, 'key') }, options);
  }

  // The screen a desktop call is checked against: invalid_input without one.
  private screen(): DesktopSize {
    if (!this.desktopSize) throw invalidInput('the sandbox has no desktop (a create with desktop gives it one)');
    return this.desktopSize;
  }

  private async input(action: Record<string, unknown>, options: CallOptions): Promise<void> {
    const answer = await this.link.call({
      method: 'POST',
      path: `${this.base}/desktop/input`,
      body: JSON.stringify(action),
      signal: options.signal,
    });
    this.check(answer);
  }

  private commandPath(id: string): string {
    return `${this.base}/commands/${encodeURIComponent(id)}`;
  }

  private async commandCall(id: string, what: string, body: unknown, options: CallOptions): Promise<Answer> {
    const answer = await this.link.call({
      method: 'POST',
      path: `${this.commandPath(id)}/${what}`,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: options.signal,
    });
    this.check(answer);
    return answer;
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
  constructor(readonly endpoint: Endpoint, readonly timeoutMs: number) {}
  call(c: Parameters<typeof request>[1], how: { exec?: boolean } = {}): Promise<Answer> {
    return request(this.endpoint, how.exec ? c : { ...c, timeoutMs: this.timeoutMs });
  }
}

class NativeProvider implements NativeSandboxProvider {
  readonly id: string;
  readonly maxLifetimeMs: number;
  private readonly link: Link;
  private readonly image: string | undefined;

  readonly features: SandboxFeatures;
  readonly workdir: string;

  constructor(options: NativeSandboxesOptions, told?: { features: SandboxFeatures; workdir: string; maxLifetimeMs: number }) {
    const endpoint = parseEndpoint(options);
    this.link = new Link(endpoint, options.timeoutMs ?? 120_000);
    this.id = `native:${endpoint.text}`;
    this.maxLifetimeMs = told?.maxLifetimeMs ?? options.maxLifetimeMs ?? DAY_MS;
    this.features = told?.features ?? FEATURES;
    this.workdir = told?.workdir ?? WORKDIR;
    this.image = options.image;
  }

  /** What the daemon itself says it offers (GET /v1/features). */
  static async told(options: NativeSandboxesOptions): Promise<{ features: SandboxFeatures; workdir: string; maxLifetimeMs: number }> {
    const endpoint = parseEndpoint(options);
    const link = new Link(endpoint, options.timeoutMs ?? 120_000);
    const answer = await link.call({ method: 'GET', path: '/v1/features' }).finally(() => endpoint.pool.destroy());
    if (answer.status !== 200) throw failureOf(answer);
    const body = parseJson(answer.body, 'features');
    const f = body.features as Record<string, unknown> | null;
    const flag = (key: string) => {
      if (typeof f?.[key] !== 'boolean') throw malformed('features');
      return f[key] as boolean;
    };
    const kinds = body.network;
    if (!Array.isArray(kinds) || typeof body.workdir !== 'string' || !Number.isInteger(body.maxLifetimeMs)) {
      throw malformed('features');
    }
    const features: SandboxFeatures = {
      stdin: flag('stdin'),
      ports: flag('ports'),
      desktop: flag('desktop'),
      pause: flag('pause'),
      disk: flag('disk'),
      snapshot: flag('snapshot'),
      volumes: flag('volumes'),
      diskIo: flag('diskIo'),
      // Kinds a newer daemon may name and this provider does not know are left out.
      network: kinds.filter((k): k is NetworkKind => k === 'none' || k === 'all' || k === 'allow'),
    };
    return { features, workdir: body.workdir, maxLifetimeMs: body.maxLifetimeMs as number };
  }

  async create(options: CreateOptions, context: CallOptions = {}): Promise<NativeSandboxBackend> {
    if (context.signal?.aborted) throw cancelledError();
    // A cancellation while the daemon creates does not cut the call short:
    // the daemon would make the sandbox anyway, and only its answer has the
    // id to release it by.
    const answer = await this.link.call({ method: 'POST', path: '/v1/sandboxes', body: createBody(options, this.image) });
    if (answer.status !== 201) throw failureOf(answer);
    const created = parseJson(answer.body, 'created sandbox');
    const id = created.id;
    if (typeof id !== 'string' || id === '') throw malformed('created sandbox');
    let screen: DesktopSize | undefined;
    try {
      screen = desktopFrom(created.desktop);
    } catch (error) {
      await new NativeSandbox(this.link, id, undefined).release();
      throw error;
    }
    const sandbox = new NativeSandbox(this.link, id, screen);
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

/**
 * As nativeSandboxes, with `features`, `workdir` and `maxLifetimeMs` as the
 * daemon itself says them (GET /v1/features): what its host and its
 * operator allow (the network kinds, the io controller, the longest
 * lifetime), not what an engine can at most. The seed's providers are
 * plain objects made at once; this one asks the daemon first, so it is
 * awaited, and fails as a call does when the daemon cannot be reached:
 *
 *   const sandboxes = createSandboxes(await connectNativeSandboxes(), { maxSandboxes: 4, maxLifetimeMs: 600_000 });
 */
export async function connectNativeSandboxes(options: NativeSandboxesOptions = {}): Promise<NativeSandboxProvider> {
  return new NativeProvider(options, await NativeProvider.told(options));
}
