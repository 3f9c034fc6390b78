// Bad surroundings give a clear SandboxError, never a hang: no socket, a
// daemon that is down, an answer that is not mayurad's, one that never
// comes, an attachment that breaks off; and every status the daemon gives
// maps to the seed's reason.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { nativeSandboxes, SandboxError, sandboxHttpFailure } from '../src/index.js';

function scratch(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'mayura-ts-fail-'));
}

// A server on a Unix socket that answers every connection with `reply`
// (or nothing, when it is null).
async function fakeDaemon(reply: string | null | ((request: string) => string | Buffer | null)): Promise<{ socket: string; close(): void }> {
  const dir = scratch();
  const socket = path.join(dir, 's');
  const open = new Set<net.Socket>();
  const server = net.createServer((c) => {
    open.add(c);
    c.on('close', () => open.delete(c));
    c.on('error', () => {});
    c.once('data', (d: Buffer) => {
      const answer = typeof reply === 'function' ? reply(d.toString()) : reply;
      if (answer !== null) c.end(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  return {
    socket,
    close() {
      for (const c of open) c.destroy();
      server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function failure(promise: Promise<unknown>): Promise<SandboxError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof SandboxError, `not a SandboxError: ${String(error)}`);
    return error;
  }
  assert.fail('no failure');
}

describe('bad surroundings', () => {
  it('no socket: internal, saying where', async () => {
    const dir = scratch();
    const e = await failure(nativeSandboxes({ socket: path.join(dir, 'none.sock') }).create({ lifetimeMs: 1000 }));
    assert.equal(e.reason, 'internal');
    assert.match(e.message, /none\.sock: no socket there \(ENOENT\)/);
    fs.rmSync(dir, { recursive: true });
  });

  it('a daemon that is down (its socket left behind): internal, saying so', async () => {
    const dir = scratch();
    const socket = path.join(dir, 'dead.sock');
    // a socket file nobody listens on, as a killed daemon leaves it
    execFileSync('python3', ['-c', 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])', socket]);
    const e = await failure(nativeSandboxes({ socket }).create({ lifetimeMs: 1000 }));
    assert.equal(e.reason, 'internal');
    assert.match(e.message, /ECONNREFUSED/);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('an answer that is not HTTP, or not of mayurad shape: internal', async () => {
    for (const reply of [
      'garbage\r\n\r\n',
      'HTTP/1.1 201 Created\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot json!',
      'HTTP/1.1 201 Created\r\nContent-Length: 12\r\nConnection: close\r\n\r\n{"id": 1234}',
    ]) {
      const fake = await fakeDaemon(reply);
      const e = await failure(nativeSandboxes({ socket: fake.socket }).create({ lifetimeMs: 1000 }));
      assert.equal(e.reason, 'internal', reply);
      fake.close();
    }
  });

  it("an error answer gives the status's reason, never the daemon's text", async () => {
    const body = '{"reason":"LIMIT_REACHED","message":"secret daemon text"}';
    const fake = await fakeDaemon(`HTTP/1.1 429 Too Many\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
    const e = await failure(nativeSandboxes({ socket: fake.socket }).create({ lifetimeMs: 1000 }));
    assert.equal(e.reason, 'limit_reached');
    assert.doesNotMatch(e.message, /secret/);
    fake.close();
  });

  it("an exec's stream that breaks off, or ends with no result: internal, not a hang", async () => {
    const created = '{"id":"0123456789abcdef","workdir":"/workspace"}';
    for (const stream of ['5\r\n{"str', '1f\r\n{"stream":"stdout","data":"x"}\n\r\n0\r\n\r\n']) {
      const fake = await fakeDaemon((request) =>
        request.startsWith('POST /v1/sandboxes/')
          ? `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${stream}`
          : `HTTP/1.1 201 Created\r\nContent-Length: ${created.length}\r\nConnection: close\r\n\r\n${created}`,
      );
      const sandbox = await nativeSandboxes({ socket: fake.socket }).create({ lifetimeMs: 1000 });
      const e = await failure(sandbox.exec(['true']));
      assert.equal(e.reason, 'internal', stream);
      assert.match(e.message, stream.startsWith('5') ? /broke off/ : /ended with no result/);
      fake.close();
    }
  });

  // A hang would outlast the test's own bound and fail it; no time is asserted.
  it('an answer that never comes: internal after the timeout, not a hang', { timeout: 60_000 }, async () => {
    const fake = await fakeDaemon(null);
    const e = await failure(nativeSandboxes({ socket: fake.socket, timeoutMs: 300 }).create({ lifetimeMs: 1000 }));
    assert.equal(e.reason, 'internal');
    assert.match(e.message, /no answer within 300 ms/);
    fake.close();
  });

  it('an attachment that ends without the command, says a failure, or never upgrades: its error, not a hang', async () => {
    const created = '{"id":"0123456789abcdef","workdir":"/workspace"}';
    // The daemon's frames: unmasked, each one whole.
    const frame = (opcode: number, payload: Buffer) => Buffer.concat([Buffer.from([0x80 | opcode, payload.length]), payload]);
    const upgraded = (request: string) => {
      const key = /^sec-websocket-key: *(\S+)/im.exec(request)?.[1] ?? '';
      const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
      return `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`;
    };
    const cases: Array<[Buffer | null, string, RegExp]> = [
      [Buffer.alloc(0), 'internal', /closed the attachment without the command's state/],
      [frame(1, Buffer.from('{"reason":"GONE","message":"secret daemon text"}')), 'gone', /the attachment failed \(gone\)/],
      [frame(2, Buffer.from([7, 0x61])), 'internal', /malformed/],
      [frame(1, Buffer.from('{"command": 1}')), 'internal', /malformed/],
      [null, 'internal', /no answer within 300 ms/],
    ];
    for (const [after, reason, message] of cases) {
      const fake = await fakeDaemon((request) => {
        if (!request.startsWith('GET ')) return `HTTP/1.1 201 Created\r\nContent-Length: ${created.length}\r\nConnection: close\r\n\r\n${created}`;
        return after === null ? null : Buffer.concat([Buffer.from(upgraded(request)), after]);
      });
      const sandbox = await nativeSandboxes({ socket: fake.socket, timeoutMs: 300 }).create({ lifetimeMs: 1000 });
      const e = await failure(sandbox.attach('c1'));
      assert.equal(e.reason, reason, message.source);
      assert.match(e.message, message);
      assert.doesNotMatch(e.message, /secret/);
      fake.close();
    }
  });

  it('bad addresses are invalid_config at once', () => {
    assert.throws(() => nativeSandboxes({ url: 'http://host:80' }), { reason: 'invalid_config' });
    assert.throws(() => nativeSandboxes({ url: 'https://host:8443' }), { reason: 'invalid_config' });  // no token
    assert.throws(() => nativeSandboxes({ url: 'ftp://x' }), { reason: 'invalid_config' });
  });

  it("maps every status as the seed's sandboxHttpFailure does", () => {
    const expected: Record<number, string> = {
      400: 'invalid_input', 409: 'invalid_input', 422: 'invalid_input', 401: 'permission_denied', 403: 'permission_denied',
      404: 'gone', 410: 'gone', 412: 'not_found', 413: 'limit_reached', 429: 'limit_reached', 424: 'invalid_config',
      499: 'cancelled', 501: 'unsupported', 500: 'internal', 502: 'internal', 408: 'internal',
    };
    for (const [status, reason] of Object.entries(expected)) assert.equal(sandboxHttpFailure(Number(status)).reason, reason, status);
  });
});
