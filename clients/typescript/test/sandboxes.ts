// A test-only stand-in of mayura/sandbox's limits layer (createSandboxes),
// as far as the tests need it: mayura/sandbox is not on the registry here.
// It holds a provider's sandboxes to the same limits and checks input before
// the provider sees it, as the seed says the real one does.

import {
  SandboxError,
  type CreateOptions,
  type NetworkKind,
  type SandboxBackend,
  type SandboxProvider,
} from '../src/index.js';

export interface SandboxesOptions {
  maxSandboxes: number;
  maxLifetimeMs: number;
  network?: NetworkKind[];
}

// What a caller holds: the provider's backend, behind the checks.
export interface Sandbox extends SandboxBackend {
  readonly features: SandboxProvider['features'];
}

function checkPath(path: string): void {
  if (path === '' || path.includes('\0') || path.split('/').includes('..')) {
    throw new SandboxError('invalid_input', `path ${JSON.stringify(path)} is not a path in the sandbox`);
  }
}

export function createSandboxes(provider: SandboxProvider, options: SandboxesOptions) {
  const alive = new Set<SandboxBackend>();
  let closed = false;
  const allowed = options.network ?? ['none'];
  return {
    async create(create: CreateOptions): Promise<Sandbox> {
      if (closed) throw new SandboxError('gone', 'the sandboxes are closed');
      if (!(create.lifetimeMs > 0) || create.lifetimeMs > Math.min(options.maxLifetimeMs, provider.maxLifetimeMs)) {
        throw new SandboxError('invalid_input', 'lifetimeMs is out of range');
      }
      const network = create.network ?? 'none';
      const kind: NetworkKind = typeof network === 'string' ? network : 'allow';
      if (!provider.features.network.includes(kind)) throw new SandboxError('invalid_input', `the provider cannot enforce ${kind}`);
      if (!allowed.includes(kind)) throw new SandboxError('permission_denied', `network ${kind} is not allowed`);
      if (alive.size >= options.maxSandboxes) throw new SandboxError('limit_reached', 'maxSandboxes');
      const backend = await provider.create(create);
      alive.add(backend);
      let released = false;
      const live = () => {
        if (released) throw new SandboxError('gone', 'the sandbox was released');
        return backend;
      };
      return {
        features: provider.features,
        exec: (argv, o) => {
          if (argv.length === 0 || argv[0] === '') return Promise.reject(new SandboxError('invalid_input', 'command is empty'));
          return live().exec(argv, o);
        },
        readFile: async (p, o) => (checkPath(p), live().readFile(p, o)),
        writeFile: async (p, d, o) => (checkPath(p), live().writeFile(p, d, o)),
        list: async (p, o) => (checkPath(p), live().list(p, o)),
        remove: async (p, o) => (checkPath(p), live().remove(p, o)),
        url: async (port) => live().url(port),
        release: async () => {
          if (released) return;
          released = true;
          alive.delete(backend);
          await backend.release();
        },
      };
    },
    async close(): Promise<void> {
      closed = true;
      await Promise.all([...alive].map((b) => b.release()));
      alive.clear();
    },
  };
}
