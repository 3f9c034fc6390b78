// mayura-run mcp driven by the official MCP TypeScript SDK's client, as any
// MCP host would drive it: over stdio, through a real mayurad. The session
// lists the tools, runs a command, writes and reads a file, leaves a server
// running and reads its log, takes a screenshot (an image block), hears a
// tool's failure as an error result, and leaves no sandbox behind.

import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as path from 'node:path';
import { test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { startDaemon } from './daemon.js';

const here = path.dirname(new URL(import.meta.url).pathname);
const MAYURA_RUN = process.env.MAYURA_RUN ?? path.resolve(here, '../../../../build/tools/mayura-run');

interface Content {
  type: string;
  text?: string;
  data?: string;
  mimeType?: string;
}
interface CallResult {
  content: Content[];
  isError?: boolean;
}

// The daemon's own list of sandboxes.
function sandboxesOf(socket: string): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const request = http.get({ socketPath: socket, path: '/v1/sandboxes' }, (response) => {
      let body = '';
      response.on('data', (d: Buffer) => (body += d.toString()));
      response.on('end', () => resolve((JSON.parse(body) as { sandboxes: unknown[] }).sandboxes));
    });
    request.on('error', reject);
  });
}

function first(result: CallResult): Content {
  const block = result.content[0];
  assert.ok(block, JSON.stringify(result));
  return block;
}

function textOf(result: CallResult): Record<string, unknown> {
  assert.equal(result.isError, false, JSON.stringify(result));
  assert.equal(result.content.length, 1);
  assert.equal(first(result).type, 'text');
  return JSON.parse(first(result).text ?? '') as Record<string, unknown>;
}

test('an MCP client works in a sandbox through mayura-run mcp', { timeout: 120_000 }, async () => {
  const daemon = await startDaemon();
  let stderr = '';
  try {
    const transport = new StdioClientTransport({
      command: MAYURA_RUN,
      args: ['mcp', '--desktop', '320x200', '--lifetime', '300', '--timeout', '30'],
      env: { ...process.env, MAYURA_HOST: `unix://${daemon.socket}` } as Record<string, string>,
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const client = new Client({ name: 'mayura-test', version: '1.0.0' });
    await client.connect(transport);
    assert.equal(client.getServerVersion()?.name, 'mayura');
    assert.match(client.getInstructions() ?? '', /Linux sandbox/);

    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const name of ['sandbox_read', 'sandbox_list', 'sandbox_exec', 'sandbox_write', 'sandbox_remove', 'sandbox_start',
      'sandbox_output', 'sandbox_stop', 'sandbox_screenshot', 'sandbox_click', 'sandbox_type']) {
      assert.ok(names.includes(name), `${name} in ${names.join(' ')}`);
    }
    assert.equal(tools.find((t) => t.name === 'sandbox_read')?.annotations?.readOnlyHint, true);
    assert.equal(tools.find((t) => t.name === 'sandbox_exec')?.annotations?.readOnlyHint, false);
    // No sandbox until a tool needs one.
    assert.equal((await sandboxesOf(daemon.socket)).length, 0);

    const exec = textOf((await client.callTool({ name: 'sandbox_exec', arguments: { command: 'echo hi; id -u' } })) as CallResult);
    assert.equal(exec.exitCode, 0);
    assert.match(String(exec.stdout), /^hi\n\d+\n$/);
    assert.equal((await sandboxesOf(daemon.socket)).length, 1);

    textOf((await client.callTool({ name: 'sandbox_write', arguments: { path: 'notes/a.txt', content: 'from the model' } })) as CallResult);
    const read = textOf((await client.callTool({ name: 'sandbox_read', arguments: { path: 'notes/a.txt' } })) as CallResult);
    assert.equal(read.content, 'from the model');

    // A server left running, its log read in a later call.
    const started = textOf((await client.callTool({
      name: 'sandbox_start',
      arguments: { command: 'echo listening; while read l; do echo "got $l"; done' },
    })) as CallResult);
    const id = String(started.id);
    await client.callTool({ name: 'sandbox_input', arguments: { id, data: 'ping\n' } });
    let log = '';
    for (let i = 0; i < 200 && !log.includes('got ping'); ++i) {
      log = String(textOf((await client.callTool({ name: 'sandbox_output', arguments: { id } })) as CallResult).data);
      if (!log.includes('got ping')) await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(log, 'listening\ngot ping\n');
    assert.equal(textOf((await client.callTool({ name: 'sandbox_stop', arguments: { id } })) as CallResult).state, 'stopped');

    // The screen as an image block: a PNG of the size asked for.
    const shot = (await client.callTool({ name: 'sandbox_screenshot', arguments: {} })) as CallResult;
    assert.equal(shot.isError, false);
    assert.equal(first(shot).type, 'image');
    assert.equal(first(shot).mimeType, 'image/png');
    const png = Buffer.from(first(shot).data ?? '', 'base64');
    assert.deepEqual([...png.subarray(1, 4)], [...Buffer.from('PNG')]);
    assert.equal(png.readUInt32BE(16), 320);
    assert.equal(png.readUInt32BE(20), 200);

    // A tool's failure is the model's to read; a missing tool is the client's error.
    const missing = (await client.callTool({ name: 'sandbox_read', arguments: { path: 'no/such/file' } })) as CallResult;
    assert.equal(missing.isError, true);
    assert.match(first(missing).text ?? '', /^NOT_FOUND: /);
    const bad = (await client.callTool({ name: 'sandbox_exec', arguments: { command: 'true', timeoutMs: 30_001 } })) as CallResult;
    assert.equal(bad.isError, true);
    assert.match(first(bad).text ?? '', /^INVALID_INPUT: /);
    await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }));

    const pid = transport.pid;
    await client.close();
    // mayura-run ended, and released its sandbox on the way out.
    for (let i = 0; i < 200 && pid !== null && alive(pid); ++i) await new Promise((r) => setTimeout(r, 25));
    assert.ok(pid === null || !alive(pid), 'mayura-run mcp outlived its client');
    assert.equal((await sandboxesOf(daemon.socket)).length, 0, stderr);
  } finally {
    await daemon.stop();
  }
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
