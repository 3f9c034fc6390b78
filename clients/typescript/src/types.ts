// The provider contract of mayura/sandbox, declared here as the seed
// describes it ("Writing a provider"): mayura/sandbox is not on the
// registry, and a provider must plug into the real createSandboxes
// unchanged, so these are shaped exactly as it expects them.

/** What kind of failure a SandboxError is. */
export type SandboxErrorReason =
  | 'invalid_input'
  | 'invalid_config'
  | 'permission_denied'
  | 'gone'
  | 'cancelled'
  | 'limit_reached'
  | 'not_found'
  | 'unsupported'
  | 'internal';

/** The contract's one error: its reason says what kind of failure it was; its message is ours. */
export class SandboxError extends Error {
  readonly reason: SandboxErrorReason;
  constructor(reason: SandboxErrorReason, message: string) {
    super(message);
    this.name = 'SandboxError';
    this.reason = reason;
  }
}

/**
 * The SandboxError for a failed HTTP status, in our words only (the seed's
 * sandboxHttpFailure). mayurad's own statuses for reasons the seed gives
 * none: 412 not_found (a path in the sandbox), 424 invalid_config, 499
 * cancelled.
 */
export function sandboxHttpFailure(status: number): SandboxError {
  const reasons: Record<number, SandboxErrorReason> = {
    400: 'invalid_input',
    409: 'invalid_input',
    422: 'invalid_input',
    401: 'permission_denied',
    403: 'permission_denied',
    404: 'gone',
    410: 'gone',
    412: 'not_found',
    413: 'limit_reached',
    429: 'limit_reached',
    424: 'invalid_config',
    499: 'cancelled',
    501: 'unsupported',
  };
  return new SandboxError(reasons[status] ?? 'internal', `the provider answered HTTP ${status}`);
}

/**
 * What a sandbox may reach. An allowlist's entries are names (`example.com`)
 * or their subdomains (`*.example.com`), on ports 80 and 443, or with `:PORT`
 * on that port only.
 */
export type Network = 'none' | 'all' | { allow: string[] };
export type NetworkKind = 'none' | 'all' | 'allow';

/** What a provider supports beyond commands and files. */
export interface SandboxFeatures {
  stdin: boolean;
  ports: boolean;
  desktop: boolean;
  /** Whether its sandboxes can be paused and resumed (their pause, resume and paused). */
  pause?: boolean;
  /** Whether a create may put its working directory on a disk (diskMiB). */
  disk?: boolean;
  /**
   * Whether a sandbox's disk can be snapshot and forked, and a create start
   * from a snapshot (their snapshot, fork, and the create's snapshot).
   */
  snapshot?: boolean;
  /**
   * Whether the caller may keep volumes and a create mount them (the
   * provider's createVolume, volumes and deleteVolume, the create's volumes).
   */
  volumes?: boolean;
  /**
   * Whether a create may bound its disk's I/O (diskIo): where the daemon's
   * host has the io controller on cgroup2. Absent: not known here (a create
   * asking for it where the host cannot fails invalid_input).
   */
  diskIo?: boolean;
  /** The network kinds it can enforce. */
  network: NetworkKind[];
}

export interface CreateOptions {
  lifetimeMs: number;
  network?: Network;
  /** Variables every command sees. */
  env?: Record<string, string>;
  ports?: number[];
  cpus?: number;
  memoryMiB?: number;
  /**
   * The working directory and /tmp on a disk of its own of this many MiB (16
   * or more) instead of memory: past it a write fails ENOSPC; it goes with
   * the sandbox. A sandbox with a disk can be snapshot and forked.
   */
  diskMiB?: number;
  /**
   * One of the caller's snapshots to start from: the disk is a copy of it,
   * of its size (a diskMiB given must be the same); no process is copied.
   * not_found if there is none of that name.
   */
  snapshot?: string;
  /**
   * The root writable too, on the disk (diskMiB or snapshot required): what
   * the image's root user installs into /usr, /etc or /var stays, in the
   * disk's quota, and a snapshot keeps it. Only an image from the daemon's
   * store (invalid_input otherwise).
   */
  writableRoot?: boolean;
  /**
   * Volumes of the caller's to mount (at most 16), each at its path; one
   * sandbox at a time may have a volume: one another sandbox has fails
   * invalid_input, a name there is no volume of not_found.
   */
  volumes?: VolumeMount[];
  /**
   * Bounds on the I/O of the disk and of each volume (each device bounded on
   * its own), per second, enforced by the kernel: needs diskMiB, snapshot or
   * a volume. 0 or absent: no bound.
   */
  diskIo?: DiskIo;
  /** The provider's image or template. */
  image?: string;
  labels?: Record<string, string>;
  /**
   * An X display in the sandbox (where features.desktop is true), which
   * every command sees as DISPLAY: `true` for 1280x800, or a screen of this
   * size (64x64 to 3840x2160). false or absent: none.
   */
  desktop?: DesktopSize | boolean;
}

export interface ExecOptions {
  /** Aborting stops the command and everything it started; exec fails with cancelled. */
  signal?: AbortSignal;
  stdin?: string | Uint8Array;
  timeoutMs?: number;
  /** Relative to the workdir, or absolute. */
  cwd?: string;
  env?: Record<string, string>;
  /** Each piece of standard output as the command prints it (the result still holds all of it). */
  onStdout?: (chunk: Uint8Array) => void;
  /** Each piece of standard error as the command prints it. */
  onStderr?: (chunk: Uint8Array) => void;
}

export interface ExecResult {
  /** null when the command timed out. */
  exitCode: number | null;
  stdout: string;
  stderr: string;
  truncated: boolean;
  durationMs: number;
  timedOut: boolean;
}

export interface FileEntry {
  name: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
}

export interface CallOptions {
  signal?: AbortSignal;
}

/** A copy of a sandbox's disk (its working directory and /tmp), kept under a name of the caller's. */
export interface Snapshot {
  /** 1 to 64 of A-Z a-z 0-9 . _ -, a letter or digit first. */
  name: string;
  /** The size of a disk made from it. */
  diskMiB: number;
  /** What it takes on the host's disk (its data, not its size). */
  storedBytes: number;
  /** When it was taken, in ms since the epoch. */
  createdAt: number;
}

/**
 * A disk of the caller's own, kept under a name of its until deleted: it
 * outlives the sandboxes that mount it, one at a time.
 */
export interface Volume {
  /** 1 to 64 of A-Z a-z 0-9 . _ -, a letter or digit first. */
  name: string;
  /** Its size, and the most its files take (past it a write fails ENOSPC). */
  sizeMiB: number;
  /** When it was made, in ms since the epoch. */
  createdAt: number;
  /** Whether a sandbox has it mounted now (one released a moment ago may hold it a moment longer). */
  inUse: boolean;
}

/** A volume of the caller's mounted into a sandbox at a create. */
/** Per second; a bytes' bound is 0 or from 2^20, an operations' 0 or from 16. */
export interface DiskIo {
  readBps?: number;
  writeBps?: number;
  readIops?: number;
  writeIops?: number;
}

export interface VolumeMount {
  /** The volume's name. */
  name: string;
  /**
   * Where it goes in the sandbox: an absolute, plain path; not /, nor under
   * /proc, /dev or /sys, nor the working directory or /tmp whole (under
   * either it may go).
   */
  path: string;
  /** Mounted read-only: nothing in the sandbox writes it. Default false. */
  readOnly?: boolean;
}

export interface ForkOptions extends CallOptions {
  /** How long each new sandbox lives; default: as long as the original was made for. */
  lifetimeMs?: number;
}

/** A desktop's screen, in pixels: 64x64 to 3840x2160. */
export interface DesktopSize {
  width: number;
  height: number;
}

/** A pixel of a desktop's screen: 0,0 is its top left corner. */
export interface Point {
  x: number;
  y: number;
}

/** A rectangle of a desktop's screen, on it whole: its top left corner and its size. */
export interface Region {
  x: number;
  y: number;
  width: number;
  height: number;
}

export type MouseButton = 'left' | 'middle' | 'right';
export type ScrollDirection = 'up' | 'down' | 'left' | 'right';

export interface ScreenshotOptions extends CallOptions {
  /** Only this part of the screen; absent: the whole screen. */
  region?: Region;
}

export interface ClickOptions extends CallOptions {
  /** Default left. */
  button?: MouseButton;
  /** 1 to 3 clicks one after the other (2: a double click); default 1. */
  count?: number;
}

export interface ScrollOptions extends CallOptions {
  /** How many steps of the wheel, 1 to 100; default 1. */
  amount?: number;
}

/** One sandbox, as a provider gives it to createSandboxes. */
export interface SandboxBackend {
  exec(argv: string[], options?: ExecOptions): Promise<ExecResult>;
  readFile(path: string, options?: CallOptions): Promise<Uint8Array>;
  writeFile(path: string, data: string | Uint8Array, options?: CallOptions): Promise<void>;
  list(path: string, options?: CallOptions): Promise<FileEntry[]>;
  remove(path: string, options?: CallOptions): Promise<void>;
  url(port: number): Promise<string>;
  /**
   * Stops every process of the sandbox at once, where it is, until resume
   * (exec and the file calls resume it first); its lifetime runs on. Pausing
   * a paused sandbox does nothing. Where features.pause is true.
   */
  pause?(options?: CallOptions): Promise<void>;
  /** Lets the processes of a paused sandbox go on as they were; on a running one it does nothing. */
  resume?(options?: CallOptions): Promise<void>;
  /** Whether the sandbox is paused. */
  paused?(options?: CallOptions): Promise<boolean>;
  /**
   * Copies the sandbox's disk into the caller's snapshot `name`, replacing
   * one of that name. Its processes stand still only while the copy is
   * taken (a paused sandbox stays paused). invalid_input for a sandbox
   * created without a disk. Where features.snapshot is true.
   */
  snapshot?(name: string, options?: CallOptions): Promise<Snapshot>;
  /**
   * `count` (1 to 64) new sandboxes, each starting with a copy of this one's
   * disk as it is now and otherwise as this one was created, each with its
   * own id, hostname, network and lifetime. No process is copied. All are
   * made or none.
   */
  fork?(count: number, options?: ForkOptions): Promise<SandboxBackend[]>;
  /**
   * The screen of a sandbox created with a desktop; undefined for one
   * created without. Where features.desktop is true, as are the calls
   * below. Each call has happened when it resolves (the X server has
   * handled its events); a point off the screen, a sandbox without a
   * desktop, and empty or overlong text fail invalid_input.
   */
  readonly desktopSize?: DesktopSize | undefined;
  /** The screen (or a region of it) as PNG bytes. */
  screenshot?(options?: ScreenshotOptions): Promise<Uint8Array>;
  /** Where the pointer is. */
  cursorPosition?(options?: CallOptions): Promise<Point>;
  /** Moves the pointer there. */
  move?(to: Point, options?: CallOptions): Promise<void>;
  /** Clicks there, with a button (default left), `count` times (1 to 3). */
  click?(at: Point, options?: ClickOptions): Promise<void>;
  /** The left button pressed at the first point, held through the rest (2 to 1000 in all), released at the last. */
  drag?(path: Point[], options?: CallOptions): Promise<void>;
  /** Turns the wheel there, `amount` steps (1 to 100, default 1) that way. */
  scroll?(at: Point, direction: ScrollDirection, options?: ScrollOptions): Promise<void>;
  /** Types text (a newline is Return; characters on no key of the layout too), up to 64 KiB of UTF-8. */
  type?(text: string, options?: CallOptions): Promise<void>;
  /**
   * Presses keys by xdotool's names: `ctrl+s`, `Return`, `alt+Tab`; several
   * combinations, separated by spaces, one after the other. An unknown name
   * fails invalid_input.
   */
  key?(keys: string, options?: CallOptions): Promise<void>;
  /** Ends the sandbox and everything in it (a paused one too); never rejects. */
  release(): Promise<void>;
}

export interface SandboxProvider {
  readonly id: string;
  readonly features: SandboxFeatures;
  readonly workdir: string;
  readonly maxLifetimeMs: number;
  create(options: CreateOptions, context?: CallOptions): Promise<SandboxBackend>;
  /** The caller's snapshots, by name. Where features.snapshot is true. */
  snapshots?(options?: CallOptions): Promise<Snapshot[]>;
  /** Deletes one of the caller's snapshots; not_found if it has none of that name. */
  deleteSnapshot?(name: string, options?: CallOptions): Promise<void>;
  /**
   * Makes a volume of the caller's, empty, of `sizeMiB` (16 or more):
   * invalid_input if it has one of that name. Where features.volumes is true.
   */
  createVolume?(name: string, sizeMiB: number, options?: CallOptions): Promise<Volume>;
  /** The caller's volumes, by name. */
  volumes?(options?: CallOptions): Promise<Volume[]>;
  /**
   * Deletes one of the caller's volumes and its files: not_found if it has
   * none of that name, invalid_input while a sandbox has it mounted.
   */
  deleteVolume?(name: string, options?: CallOptions): Promise<void>;
}

/** A terminal's size in characters: 1 to 1000 each. */
export interface TerminalSize {
  rows: number;
  columns: number;
}

/** A command left running in a sandbox (a dev server, a watcher, a REPL), held by mayurad. */
export interface StartOptions extends CallOptions {
  cwd?: string;
  env?: Record<string, string>;
  /** Stops it, and everything it started, after this long; none: it runs until the sandbox ends. */
  timeoutMs?: number;
  /** Written first; the input stays open until closeInput. */
  stdin?: string | Uint8Array;
  /** On a terminal of its own, of this size: its output is one stream (stdout). */
  terminal?: TerminalSize;
  /** The newest bytes held of each stream: 1 KiB up to the daemon's maxOutputBytes; default 1 MiB. */
  keepBytes?: number;
}

export type CommandState = 'running' | 'exited' | 'timedOut' | 'stopped' | 'failed';

export interface CommandInfo {
  /** The sandbox's own: c1, c2, ... */
  id: string;
  argv: string[];
  state: CommandState;
  /** Once exited (128 + a signal's number for one that killed it). */
  exitCode: number | null;
  /** A failed command's reason. */
  error?: string;
  /** ms since the epoch */
  startedAt: number;
  endedAt: number | null;
  terminal: boolean;
  /** All it printed so far on each stream: the offset its next byte will have. */
  stdoutBytes: number;
  stderrBytes: number;
}

/** What is held of one stream from an offset on. */
export interface OutputSlice {
  /** Where data starts: the offset asked for, or the oldest still held. */
  offset: number;
  /** Bytes from the asked offset on that are no longer held. */
  dropped: number;
  data: Uint8Array;
  /** offset + data.length: where to read on from. */
  next: number;
}

export interface OutputOptions extends CallOptions {
  stream?: 'stdout' | 'stderr';
  /** The offset to read from; 0 (default): the oldest byte held. */
  from?: number;
  /** At most this many bytes (default 1 MiB). */
  maxBytes?: number;
}

export interface AttachOptions extends CallOptions {
  /** Where to start in each stream (0: the oldest byte held). */
  stdoutFrom?: number;
  stderrFrom?: number;
  onStdout?: (chunk: Uint8Array) => void;
  onStderr?: (chunk: Uint8Array) => void;
  /** A gap: bytes dropped before they were read, where they were. */
  onDropped?: (stream: 'stdout' | 'stderr', bytes: number) => void;
  /** false: only what is held now. Default true: on until the command has ended. */
  follow?: boolean;
  /** Of the attachment, not the command. */
  timeoutMs?: number;
}

export interface InteractiveAttachOptions extends AttachOptions {
  /**
   * A message of the attachment's that the daemon refused (a signal to a
   * command that has ended, a resize of one without a terminal): the
   * attachment goes on. A failure that ends the attachment comes here too,
   * and then `done` rejects with it.
   */
  onRefused?: (error: SandboxError) => void;
}

/**
 * A command attached to over one connection to the daemon: its output comes
 * to the options' callbacks as it is printed, and its input, signals, sizes
 * and stop go the other way, each a message of the connection's (no request
 * of its own). A call after the attachment has ended fails invalid_input;
 * the command is not ended by it.
 */
export interface CommandAttachment {
  /**
   * Input, written to the command in order (UTF-8 for a string). Resolves
   * once it has been handed to the connection, not once the command read
   * it: the daemon holds 16 MiB of it unread at most and takes more only as
   * the command reads, so a caller that awaits each write goes at the
   * command's pace. Writes not awaited queue
   * here: one that would leave more than 1 MiB unsent fails limit_reached
   * (with nothing unsent, a larger one goes, in messages of 1 MiB).
   */
  write(data: string | Uint8Array): Promise<void>;
  /** Ends its input. */
  closeInput(): Promise<void>;
  /** `signal` (1 to 64) to its process group. */
  signal(signal: number): Promise<void>;
  /** A terminal command's new size, 1 to 1000 each (its foreground job gets SIGWINCH). */
  resize(size: TerminalSize): Promise<void>;
  /** Stops it with everything it started: `done` once it has ended. */
  stop(): Promise<CommandInfo>;
  /** Ends the attachment, not the command: `done`, the command as it is then. */
  close(): Promise<CommandInfo>;
  /**
   * The command once it has ended and all its output was given (without
   * follow, once what was held went; at timeoutMs or close, as it is then).
   * Rejects cancelled when the options' signal aborts, and with the
   * failure that ended the attachment otherwise.
   */
  readonly done: Promise<CommandInfo>;
}
