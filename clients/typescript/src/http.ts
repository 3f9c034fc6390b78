// One HTTP/1.1 request to mayurad, over its Unix socket or over TLS with a
// bearer token, on Node's own http and https, or a WebSocket to it on the
// same connection's terms (ws): the provider's only ways out. Every failure
// is a SandboxError in our words; nothing of the daemon's text or of Node's
// error objects reaches the caller but an errno's code.

import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';

import WebSocket from 'ws';

import { SandboxError } from './types.js';

// Each endpoint (each provider) has a keep-alive pool of its own: a
// connection over TLS is its first token's client from then on, so one made
// with another token or trusting another CA is never reused.
export type Endpoint =
  | { kind: 'unix'; path: string; text: string; pool: http.Agent }
  | { kind: 'https'; url: URL; token: string; ca: string | undefined; text: string; pool: https.Agent };

export interface Call {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  body?: Uint8Array | string;
  contentType?: string;
  /** The whole call's bound; none: as long as it takes (an exec). */
  timeoutMs?: number;
  /** On an abort the request side is closed (mayurad stops what it runs) and its answer is awaited a while more. */
  signal?: AbortSignal | undefined;
  /** Each piece of the answer's body as it comes (then not kept). */
  onData?: (chunk: Buffer) => void;
}

export interface Answer {
  status: number;
  body: Buffer;
  /** The call's signal aborted while it ran. */
  cancelled: boolean;
}

/** After an abort, how long mayurad's answer (once it has stopped the command) is waited for. */
const CANCEL_GRACE_MS = 15_000;
const MAX_ANSWER_BYTES = 1 << 30;

export function cancelledError(): SandboxError {
  return new SandboxError('cancelled', 'the operation was cancelled');
}

export function unreachable(endpoint: Endpoint, what: string): SandboxError {
  return new SandboxError('internal', `mayurad at ${endpoint.text}: ${what}`);
}

// Node's errors carry a code (ENOENT, ECONNREFUSED) and text of Node's own:
// only the code is said.
function describe(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[A-Z_0-9]+$/.test(code)) {
    if (code === 'ENOENT') return 'no socket there (ENOENT)';
    if (code === 'ECONNREFUSED') return 'nothing listens there (ECONNREFUSED)';
    if (code === 'EACCES') return 'this user may not connect (EACCES)';
    if (code === 'ECONNRESET' || code === 'EPIPE')
      return `the connection closed before the answer (${code}: mayurad stopped or restarted); whether the call took effect is unknown`;
    return `the connection failed (${code})`;
  }
  return 'the connection failed';
}

// Each endpoint's keep-alive pool: a call reuses an idle connection (a
// create, an exec and a release are one connection, not three). An idle one
// is closed here after IDLE_MS, well within mayurad's own bound on an idle
// connection (its headerTimeoutMs, 10 s by default), so that the daemon
// seldom closes one under a new request. When a request on a reused
// connection is reset before any answer, the daemon most likely closed it
// idle, unread; a GET, PUT or DELETE, which may safely run twice, is sent
// once more on a new connection. A POST is not (a create or a start must
// not happen twice if the daemon did read it): it fails as before, its
// effect unknown.
const IDLE_MS = 2_000;
const IDEMPOTENT = new Set(['GET', 'PUT', 'DELETE']);

export async function request(endpoint: Endpoint, call: Call): Promise<Answer> {
  try {
    return await attempt(endpoint, call, true);
  } catch (error) {
    if (!(error instanceof StaleConnection)) throw error;
    return attempt(endpoint, call, false);
  }
}

// A reused connection that the daemon had closed: the request never reached it.
class StaleConnection extends Error {}

function attempt(endpoint: Endpoint, call: Call, pooled: boolean): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    if (call.signal?.aborted) {
      reject(cancelledError());
      return;
    }
    const body = typeof call.body === 'string' ? Buffer.from(call.body, 'utf8') : call.body ? Buffer.from(call.body) : undefined;
    const headers: Record<string, string> = pooled ? {} : { connection: 'close' };
    const agent = pooled ? endpoint.pool : false;
    if (body) {
      headers['content-type'] = call.contentType ?? 'application/json';
      headers['content-length'] = String(body.length);
    }
    let req: http.ClientRequest;
    if (endpoint.kind === 'unix') {
      req = http.request({ socketPath: endpoint.path, path: call.path, method: call.method, headers: { ...headers, host: 'mayurad' }, agent });
    } else {
      headers.authorization = `Bearer ${endpoint.token}`;
      req = https.request({
        hostname: endpoint.url.hostname.replace(/^\[|\]$/g, ''),
        port: endpoint.url.port,
        path: call.path,
        method: call.method,
        headers,
        agent,
        ...(endpoint.ca !== undefined ? { ca: endpoint.ca } : {}),
      });
    }

    let settled = false;
    let cancelled = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (outcome: Answer | SandboxError) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      call.signal?.removeEventListener('abort', onAbort);
      if (outcome instanceof SandboxError) {
        req.destroy();
        reject(outcome);
      } else {
        resolve(outcome);
      }
    };
    const onAbort = () => {
      cancelled = true;
      // Our side of the connection closes: mayurad stops the command and
      // everything it started, then answers.
      if (req.socket) req.socket.end();
      else req.once('socket', (s) => s.end());
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => finish(cancelledError()), CANCEL_GRACE_MS);
    };
    call.signal?.addEventListener('abort', onAbort, { once: true });
    if (call.timeoutMs !== undefined) {
      const ms = call.timeoutMs;
      timer = setTimeout(() => finish(unreachable(endpoint, `no answer within ${ms} ms`)), ms);
    }

    let answered = false;
    req.on('error', (error) => {
      const code = (error as { code?: unknown }).code;
      if (pooled && req.reusedSocket && !answered && !cancelled && IDEMPOTENT.has(call.method) &&
          (code === 'ECONNRESET' || code === 'EPIPE')) {
        if (settled) return;
        settled = true;
        if (timer) clearTimeout(timer);
        call.signal?.removeEventListener('abort', onAbort);
        reject(new StaleConnection());
        return;
      }
      finish(cancelled ? cancelledError() : unreachable(endpoint, describe(error)));
    });
    req.on('response', (res) => {
      answered = true;
      const status = res.statusCode ?? 0;
      const pieces: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (settled) return;
        try {
          if (call.onData && status === 200) {
            call.onData(chunk);
            return;
          }
        } catch (error) {
          finish(error instanceof SandboxError ? error : new SandboxError('internal', "mayurad's answer could not be read"));
          return;
        }
        size += chunk.length;
        if (size > MAX_ANSWER_BYTES) {
          finish(new SandboxError('limit_reached', "mayurad's answer is larger than 1 GiB"));
          return;
        }
        pieces.push(chunk);
      });
      res.on('end', () => finish({ status, body: Buffer.concat(pieces), cancelled }));
      res.on('error', () => finish(cancelled ? cancelledError() : unreachable(endpoint, 'the answer broke off (mayurad stopped or restarted); whether the call took effect is unknown')));
      // (after 'end' this changes nothing: the call is settled)
      res.on('close', () => finish(cancelled ? cancelledError() : unreachable(endpoint, 'the answer broke off (mayurad stopped or restarted); whether the call took effect is unknown')));
    });
    req.end(body);
  });
}

/**
 * A WebSocket to mayurad at `path` (with its query), connecting at once:
 * over its Unix socket, or over TLS trusting the endpoint's CA, with its
 * bearer token. Never pooled: an upgraded connection is the WebSocket's alone.
 * Its handshake is bounded by its user, which also listens for its events.
 */
export function webSocket(endpoint: Endpoint, path: string): WebSocket {
  // (The daemon speaks no compression; no offer is made.)
  if (endpoint.kind === 'unix') {
    // ws's own ws+unix: address ends the socket's path at its first ':'; a
    // connection made here takes any path.
    return new WebSocket(`ws://mayurad${path}`, { perMessageDeflate: false, createConnection: () => net.connect(endpoint.path) });
  }
  return new WebSocket(`wss://${endpoint.url.host}${path}`, {
    perMessageDeflate: false,
    headers: { authorization: `Bearer ${endpoint.token}` },
    ...(endpoint.ca !== undefined ? { ca: endpoint.ca } : {}),
  });
}

/** A connection's failure (a WebSocket's), in our words. */
export function connectionFailure(endpoint: Endpoint, error: unknown): SandboxError {
  return unreachable(endpoint, describe(error));
}

/** An answer refusing an upgrade, read whole; its status alone if it breaks off. */
export function refusal(res: http.IncomingMessage): Promise<Answer> {
  return new Promise((resolve) => {
    const pieces: Buffer[] = [];
    let size = 0;
    const done = () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(pieces), cancelled: false });
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_ANSWER_BYTES) pieces.push(chunk);
    });
    res.on('end', done);
    res.on('error', done);
    res.on('close', done);
  });
}

/** "unix:///run/mayura/mayurad.sock", "/run/mayura/mayurad.sock" or "https://host:port". */
export function parseEndpoint(options: { socket?: string; url?: string; token?: string; ca?: string }): Endpoint {
  const given = options.url ?? options.socket ?? 'unix:///run/mayura/mayurad.sock';
  if (given.startsWith('unix://') || given.startsWith('/')) {
    const path = given.startsWith('unix://') ? given.slice('unix://'.length) : given;
    if (!path.startsWith('/')) throw new SandboxError('invalid_config', `a unix:// address needs an absolute path: ${given}`);
    return { kind: 'unix', path, text: `unix://${path}`, pool: new http.Agent({ keepAlive: true, timeout: IDLE_MS }) };
  }
  if (given.startsWith('https://')) {
    let url: URL;
    try {
      url = new URL(given);
    } catch {
      throw new SandboxError('invalid_config', `not an address: ${given}`);
    }
    if (!url.port) throw new SandboxError('invalid_config', `an https:// address needs a port: ${given}`);
    if (!options.token) throw new SandboxError('invalid_config', 'mayurad over https needs a token');
    const pool = new https.Agent({ keepAlive: true, timeout: IDLE_MS, ...(options.ca !== undefined ? { ca: options.ca } : {}) });
    return { kind: 'https', url, token: options.token, ca: options.ca, text: `https://${url.host}`, pool };
  }
  if (given.startsWith('http://')) throw new SandboxError('invalid_config', `mayurad is reached over TCP with TLS only (https://), not ${given}`);
  throw new SandboxError('invalid_config', `a daemon's address is unix:///PATH or https://HOST:PORT, not ${given}`);
}
