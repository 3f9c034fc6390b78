// The provider's types (src/types.ts) against mayurad's OpenAPI document
// (docs/openapi.json), which the C++ unit tests check against the server:
// every property a type carries over the wire is one the document lists,
// and the names of network kinds and failure reasons are the same.

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { describe, it } from 'node:test';
import ts from 'typescript';

const document = JSON.parse(fs.readFileSync(new URL('../../../../docs/openapi.json', import.meta.url), 'utf8'));
const schemas: Record<string, { properties?: Record<string, unknown>; enum?: string[] }> = document.components.schemas;
const source = ts.createSourceFile(
  'types.ts',
  fs.readFileSync(new URL('../../src/types.ts', import.meta.url), 'utf8'),
  ts.ScriptTarget.ES2022,
  true,
);

function declaration(name: string): ts.Node {
  const found = source.statements.find(
    (s) => (ts.isInterfaceDeclaration(s) || ts.isTypeAliasDeclaration(s)) && s.name.text === name,
  );
  assert.ok(found, `src/types.ts declares ${name}`);
  return found;
}

function properties(name: string): string[] {
  const d = declaration(name);
  assert.ok(ts.isInterfaceDeclaration(d), `${name} is an interface`);
  return d.members.filter(ts.isPropertySignature).map((m) => m.name.getText(source));
}

function literals(name: string): string[] {
  const d = declaration(name);
  assert.ok(ts.isTypeAliasDeclaration(d) && ts.isUnionTypeNode(d.type), `${name} is a union`);
  return d.type.types.flatMap((t) =>
    ts.isLiteralTypeNode(t) && ts.isStringLiteral(t.literal) ? [t.literal.text] : [],
  );
}

function documented(schema: string): Set<string> {
  return new Set(Object.keys(schemas[schema]?.properties ?? {}));
}

describe('the provider types against mayurad OpenAPI document', () => {
  it('lists every property the types send or read', () => {
    const pairs: [string, string, string[]][] = [
      ['CreateOptions', 'CreateRequest', []],
      ['SandboxFeatures', 'Features', []],
      ['FileEntry', 'FileEntry', []],
      ['Snapshot', 'Snapshot', []],
      ['Volume', 'Volume', []],
      ['VolumeMount', 'VolumeMount', []],
      ['DiskIo', 'DiskIo', []],
      // The output comes in the stream's lines before the end line.
      ['ExecResult', 'ExecEnd', ['stdout', 'stderr']],
    ];
    for (const [type, schema, streamed] of pairs) {
      const listed = documented(schema);
      for (const p of properties(type)) {
        assert.ok(listed.has(p) || streamed.includes(p), `${type}.${p} is in the document's ${schema}`);
      }
    }
    // What an exec sends: its options but the signal and the callbacks,
    // which stay in the client.
    const local = ['signal', 'onStdout', 'onStderr'];
    const execRequest = documented('ExecRequest');
    for (const p of properties('ExecOptions').filter((p) => !local.includes(p))) {
      assert.ok(execRequest.has(p), `ExecOptions.${p} is in the document's ExecRequest`);
    }
    // A background command: what a start sends, and what a command and an
    // output slice are, whole.
    const startRequest = documented('StartRequest');
    for (const p of properties('StartOptions').filter((p) => !local.includes(p))) {
      assert.ok(startRequest.has(p), `StartOptions.${p} is in the document's StartRequest`);
    }
    assert.deepEqual(new Set(properties('CommandInfo')), documented('Command'));
    assert.deepEqual(new Set(properties('OutputSlice')), documented('OutputSlice'));
    assert.deepEqual(new Set(properties('TerminalSize')), documented('TerminalSize'));
    assert.deepEqual(new Set(literals('CommandState')), new Set(schemas.Command?.properties?.state ? (schemas.Command.properties.state as { enum: string[] }).enum : []));
    // What a fork sends: its count, and its options but the signal.
    const forkRequest = documented('ForkRequest');
    assert.ok(forkRequest.has('count'), "count is in the document's ForkRequest");
    for (const p of properties('ForkOptions').filter((p) => p !== 'signal')) {
      assert.ok(forkRequest.has(p), `ForkOptions.${p} is in the document's ForkRequest`);
    }
    // A snapshot and a volume are read whole: every property the document lists.
    assert.deepEqual(new Set(properties('Snapshot')), documented('Snapshot'));
    assert.deepEqual(new Set(properties('Volume')), documented('Volume'));
  });

  it('shapes the desktop as the document does', () => {
    assert.deepEqual(new Set(properties('DesktopSize')), documented('DesktopSize'));
    assert.deepEqual(new Set(properties('Point')), documented('Point'));
    // A region is the screenshot's query.
    const screenshot = document.paths['/v1/sandboxes/{id}/desktop/screenshot'].get;
    const query = (screenshot.parameters as { name: string; in: string }[]).filter((p) => p.in === 'query').map((p) => p.name);
    assert.deepEqual(new Set(properties('Region')), new Set(query));
    // What an action sends: its options but the signal.
    const input = schemas.DesktopInput?.properties as Record<string, { enum?: string[] }>;
    const actionProperties = documented('DesktopInput');
    for (const type of ['ClickOptions', 'ScrollOptions']) {
      for (const p of properties(type).filter((p) => p !== 'signal')) {
        assert.ok(actionProperties.has(p), `${type}.${p} is in the document's DesktopInput`);
      }
    }
    assert.deepEqual(new Set(literals('MouseButton')), new Set(input.button?.enum));
    assert.deepEqual(new Set(literals('ScrollDirection')), new Set(input.direction?.enum));
    // Each action the document lists is a call of the backend's.
    const backend = declaration('SandboxBackend');
    assert.ok(ts.isInterfaceDeclaration(backend));
    const calls = new Set(backend.members.filter(ts.isMethodSignature).map((m) => m.name.getText(source)));
    const actions = input.action?.enum ?? [];
    assert.ok(actions.length > 0, "the document's DesktopInput lists its actions");
    for (const action of actions) assert.ok(calls.has(action), `SandboxBackend has ${action}`);
    assert.ok(calls.has('screenshot') && calls.has('cursorPosition'), 'SandboxBackend has screenshot and cursorPosition');
  });

  it('names the network kinds and the failure reasons alike', () => {
    assert.deepEqual(new Set(literals('NetworkKind')), new Set(schemas.NetworkKind?.enum));
    const reasons = schemas.Error?.properties?.reason as { enum: string[] };
    assert.deepEqual(new Set(literals('SandboxErrorReason')), new Set(reasons.enum.map((r) => r.toLowerCase())));
  });
});
