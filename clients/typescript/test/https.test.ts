// A daemon over TLS: a bearer token names the client, the daemon's CA is
// given as PEM (an attachment's WebSocket too); a wrong token is
// permission_denied before anything is made, and a certificate this client
// does not trust lets no request through.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { nativeSandboxes } from '../src/index.js';
import { metric, reasonOf, startDaemon, type Daemon } from './daemon.js';

function certificate(dir: string, name: string): { pem: string; key: string } {
  const pem = path.join(dir, `${name}.pem`);
  const key = path.join(dir, `${name}.key`);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2',
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost', '-keyout', key, '-out', pem], { stdio: 'ignore' });
  return { pem, key };
}

describe('a daemon over https', () => {
  let daemon: Daemon;
  let dir: string;
  let ca: string;
  let stranger: string;
  const token = 'a-token-of-the-tests-0123456789';
  const port = 20000 + (process.pid % 20000);

  before(async () => {
    dir = fs.mkdtempSync('/tmp/mayura-ts-tls-');
    const server = certificate(dir, 'server');
    stranger = fs.readFileSync(certificate(dir, 'stranger').pem, 'utf8');
    ca = fs.readFileSync(server.pem, 'utf8');
    const tokens = path.join(dir, 'tokens');
    fs.writeFileSync(tokens, `tester ${token}\n`, { mode: 0o600 });
    daemon = await startDaemon({ tls: { listen: `127.0.0.1:${port}`, certificate: server.pem, key: server.key, tokens } });
  });
  after(async () => {
    await daemon.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('serves the contract with the token and the CA', async () => {
    const s = await nativeSandboxes({ url: `https://127.0.0.1:${port}`, token, ca }).create({ lifetimeMs: 60_000 });
    try {
      assert.equal((await s.exec(['echo', 'over tls'])).stdout, 'over tls\n');
      await s.writeFile('f', 'x');
      assert.equal(new TextDecoder().decode(await s.readFile('f')), 'x');
      // An attachment: a WebSocket on the same terms (the CA, the token).
      const c = await s.start(['cat']);
      const out: Uint8Array[] = [];
      const a = await s.attachInteractive(c.id, { onStdout: (d) => out.push(d) });
      await a.write('typed over tls');
      await a.closeInput();
      assert.equal((await a.done).exitCode, 0);
      assert.equal(new TextDecoder().decode(Buffer.concat(out)), 'typed over tls');
    } finally {
      await s.release();
    }
  });

  it('refuses a wrong token, and a client that trusts another CA gets nothing through', async () => {
    const creates = await metric(daemon, 'mayura_creates_total');
    assert.equal(await metric(daemon, 'mayura_sandboxes_alive'), 0);
    assert.equal(
      await reasonOf(nativeSandboxes({ url: `https://127.0.0.1:${port}`, token: 'not-the-token-0123456789', ca }).create({ lifetimeMs: 60_000 })),
      'permission_denied',
    );
    assert.equal(
      await reasonOf(nativeSandboxes({ url: `https://127.0.0.1:${port}`, token, ca: stranger }).create({ lifetimeMs: 60_000 })),
      'internal',
    );
    // Nothing was made: the daemon counts no create, and holds no sandbox.
    assert.equal(await metric(daemon, 'mayura_creates_total'), creates);
    assert.equal(await metric(daemon, 'mayura_sandboxes_alive'), 0);
    // (the control: a create over TLS with the token is counted)
    const s = await nativeSandboxes({ url: `https://127.0.0.1:${port}`, token, ca }).create({ lifetimeMs: 60_000 });
    try {
      assert.equal(await metric(daemon, 'mayura_creates_total'), creates + 1);
      assert.equal(await metric(daemon, 'mayura_sandboxes_alive'), 1);
    } finally {
      await s.release();
    }
  });
});
