import fs from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The layers of the code, top first. A module may import modules of its own layer or of a layer
 * below it, never above, and no import chain may come back to where it started. A file belongs
 * to the layer with the longest matching path. ARCHITECTURE.md draws the same picture; change
 * both together.
 */
export const LAYERS: { name: string; paths: string[] }[] = [
  // Starts servers, scripts and processes for the tests: above everything it starts.
  { name: 'test support', paths: ['lib/testing/', 'scripts/scan-test-logs.ts'] },
  // Seeds and times a database from outside, as a user of the code would; nothing imports them.
  { name: 'benchmarks', paths: ['bench/'] },
  { name: 'entry points', paths: ['app/', 'instrumentation.ts', 'proxy.ts', 'scripts/', 'next.config.mjs'] },
  { name: 'console UI', paths: ['components/'] },
  // Process lifecycle: open the database, register the domain's tasks, start and stop the worker,
  // probes, the metrics endpoint and its database readings, the tracing SDK.
  { name: 'process', paths: ['lib/boot.ts', 'lib/shutdown.ts', 'lib/probes.ts', 'lib/rotate-secrets.ts', 'lib/metrics/endpoint.ts', 'lib/metrics/database.ts', 'lib/tracing-sdk.ts'] },
  // The console's server side: sessions (lib/console/next-auth.ts), sign-in, forms and actions, console-only reads.
  { name: 'console', paths: ['lib/console/'] },
  // The JSON API: route wrapper, schemas, serializers, errors on the wire, the OpenAPI document.
  { name: 'wire', paths: ['lib/api/'] },
  { name: 'domain: task registration', paths: ['lib/billing/tasks.ts'] },
  // Reads over the other areas: usage summed by bucket and group.
  { name: 'domain: reports', paths: ['lib/billing/usage/'] },
  // What callers ask for: decide, charge, write.
  { name: 'domain: operations', paths: ['lib/billing/accounts/', 'lib/billing/plans/', 'lib/billing/refills/'] },
  // Binds the payment primitive to what charges pay for.
  { name: 'domain: settlement', paths: ['lib/billing/settlement.ts'] },
  { name: 'domain: what charges pay for', paths: ['lib/billing/effects/'] },
  { name: 'domain: plan catalog', paths: ['lib/billing/catalog/'] },
  // The payment primitive: record, attempt, settle, fail a charge; knows nothing of what it pays for.
  { name: 'domain: charges', paths: ['lib/billing/charges/'] },
  { name: 'domain: events', paths: ['lib/billing/events/'] },
  { name: 'domain: balances and ledger', paths: ['lib/billing/balances/'] },
  { name: 'domain: webhooks and outbox', paths: ['lib/billing/webhooks/'] },
  { name: 'domain: companies', paths: ['lib/billing/companies/'] },
  // Runs whatever is registered; knows nothing of billing.
  { name: 'jobs', paths: ['lib/jobs/'] },
  // Counters and histograms the layers above count into; the database gauges are read from above.
  { name: 'metrics', paths: ['lib/metrics/'] },
  { name: 'data', paths: ['lib/db/'] },
  // The payment processor port and its Stripe adapter.
  { name: 'processor', paths: ['lib/processor/'] },
  { name: 'leaves', paths: ['lib/money.ts', 'lib/ids.ts', 'lib/clock.ts', 'lib/errors.ts', 'lib/secrets.ts', 'lib/crypto.ts', 'lib/password-policy.ts', 'lib/net/', 'lib/http/', 'lib/env.ts', 'lib/log.ts', 'lib/tracing.ts', 'lib/tracing-redact.ts'] },
  // The local Stripe-compatible server: a package of its own, which imports nothing of the service.
  { name: 'local Stripe server', paths: ['local-stripe/'] },
];

/** Where an `import()` is allowed, and why: anywhere else every import is static. */
const DYNAMIC_IMPORTS: Record<string, string> = {
  'instrumentation.ts': 'the server boots only in the Node.js runtime, never in the edge runtime',
  'lib/db/postgres.ts': 'only the database driver in use is loaded',
  'lib/db/embedded.ts': 'only the database driver in use is loaded',
  'lib/testing/router.ts': 'loads the route files a test request matches',
  'lib/testing/harness.ts': 'starts the local Stripe server only in test files that use it',
  'scripts/serve.mjs': 'starts the standalone server once the processes are forked',
};

const ROOT = path.resolve(__dirname, '..');
const SCANNED = ['lib', 'app', 'components', 'scripts', 'bench', 'instrumentation.ts', 'proxy.ts'];
const SOURCE = /\.(ts|tsx|mts|mjs|js)$/;
const TEST = /\.(test|spec)\.(ts|tsx)$/;

export type Edge = { from: string; to: string; kind: 'static' | 'type' | 'dynamic' };

function sourceFiles(): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    const abs = path.join(ROOT, rel);
    if (!fs.existsSync(abs)) return;
    if (fs.statSync(abs).isDirectory()) {
      for (const entry of fs.readdirSync(abs)) if (entry !== 'node_modules') walk(path.posix.join(rel, entry));
    } else if (SOURCE.test(rel) && !TEST.test(rel) && !rel.endsWith('.d.ts')) out.push(rel);
  };
  for (const s of SCANNED) walk(s);
  return out.sort();
}

/** Every module specifier a file names: imports, re-exports, `import()`, `import('x').T` in types, require. */
export function importsOf(file: string, text: string): { specifier: string; kind: Edge['kind'] }[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, file.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const found: { specifier: string; kind: Edge['kind'] }[] = [];
  const visit = (node: ts.Node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const typeOnly = ts.isImportDeclaration(node) ? Boolean(node.importClause?.isTypeOnly) : node.isTypeOnly;
      found.push({ specifier: node.moduleSpecifier.text, kind: typeOnly ? 'type' : 'static' });
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference) && ts.isStringLiteral(node.moduleReference.expression)) {
      found.push({ specifier: node.moduleReference.expression.text, kind: 'static' });
    } else if (ts.isCallExpression(node) && node.arguments.length && ts.isStringLiteralLike(node.arguments[0])) {
      if (node.expression.kind === ts.SyntaxKind.ImportKeyword) found.push({ specifier: node.arguments[0].text, kind: 'dynamic' });
      else if (ts.isIdentifier(node.expression) && node.expression.text === 'require') found.push({ specifier: node.arguments[0].text, kind: 'static' });
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push({ specifier: node.argument.literal.text, kind: 'type' });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The project file a specifier names, null for a package, or an error for a local path that names nothing. */
function resolve(from: string, specifier: string): string | null | Error {
  let base: string;
  if (specifier.startsWith('@/')) base = specifier.slice(2);
  else if (specifier.startsWith('.')) base = path.posix.normalize(path.posix.join(path.posix.dirname(from), specifier));
  else return null;
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, `${base}.mjs`, `${base}.js`, `${base}/index.ts`, `${base}/index.tsx`]) {
    const abs = path.join(ROOT, candidate);
    if (fs.existsSync(abs) && fs.statSync(abs).isFile()) return candidate;
  }
  return new Error(`${from} imports ${specifier}, which names no file`);
}

export function layerOf(file: string, layers = LAYERS): number {
  let best = -1;
  let bestLength = -1;
  layers.forEach((layer, i) => {
    for (const p of layer.paths) {
      const matches = p.endsWith('/') ? file.startsWith(p) : file === p;
      if (matches && p.length > bestLength) {
        best = i;
        bestLength = p.length;
      }
    }
  });
  return best;
}

/** Edges that point from a lower layer to a higher one. */
export function upwardEdges(edges: Edge[], layers = LAYERS): string[] {
  return edges
    .filter((e) => layerOf(e.to, layers) < layerOf(e.from, layers))
    .map((e) => `${e.from} (${layers[layerOf(e.from, layers)].name}) imports ${e.to} (${layers[layerOf(e.to, layers)].name})${e.kind === 'static' ? '' : `, ${e.kind}`}`);
}

/** Every import cycle (strongly connected set of files, Tarjan), each as the files in it. */
export function cycles(edges: Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let counter = 0;
  const connect = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const members: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        members.push(w);
      } while (w !== v);
      if (members.length > 1 || (next.get(v) ?? []).includes(v)) found.push(members.sort());
    }
  };
  for (const v of next.keys()) if (!index.has(v)) connect(v);
  return found;
}

function projectGraph(): { files: string[]; edges: Edge[]; broken: string[] } {
  const files = sourceFiles();
  const edges: Edge[] = [];
  const broken: string[] = [];
  for (const file of files) {
    for (const { specifier, kind } of importsOf(file, fs.readFileSync(path.join(ROOT, file), 'utf8'))) {
      const to = resolve(file, specifier);
      if (to instanceof Error) broken.push(to.message);
      else if (to && !TEST.test(to)) edges.push({ from: file, to, kind });
    }
  }
  return { files, edges, broken };
}

describe('the import graph', () => {
  const { files, edges, broken } = projectGraph();

  it('is read whole: every kind of import, every local import resolved', () => {
    expect(files.length).toBeGreaterThan(200);
    expect(edges.length).toBeGreaterThan(500);
    for (const kind of ['static', 'type', 'dynamic'] as const) expect(edges.some((e) => e.kind === kind), kind).toBe(true);
    expect(broken).toEqual([]);
  });

  it('puts every module in a layer', () => {
    const unplaced = [...new Set([...files, ...edges.map((e) => e.to)])].filter((f) => layerOf(f) < 0);
    expect(unplaced, 'add these to LAYERS in lib/architecture.test.ts (and ARCHITECTURE.md)').toEqual([]);
  });

  it('points down only: no module imports a layer above its own', () => {
    expect(upwardEdges(edges)).toEqual([]);
  });

  it('has no cycle, type-only imports included', () => {
    expect(cycles(edges)).toEqual([]);
  });

  it('loads modules lazily only where a reason is written down', () => {
    const lazy = edges.filter((e) => e.kind === 'dynamic' && !(e.from in DYNAMIC_IMPORTS)).map((e) => `${e.from} → ${e.to}`);
    expect(lazy).toEqual([]);
    // Package imports count too: the domain and the worker load everything up front.
    const lazyPackages = files
      .filter((f) => /^lib\/(billing|jobs)\//.test(f))
      .flatMap((f) => importsOf(f, fs.readFileSync(path.join(ROOT, f), 'utf8')).filter((i) => i.kind === 'dynamic').map((i) => `${f} → ${i.specifier}`));
    expect(lazyPackages).toEqual([]);
  });

  // A client component and everything it imports is sent to the browser: the rate-card editor
  // prices its preview with lib/billing/events/rate-card.ts and checks it with the API's schemas,
  // so those (and lib/money.ts under them) must load without Node.js's own modules.
  it('sends the browser no Node.js module: nothing a client component imports reaches one', () => {
    const builtins = new Set(builtinModules);
    const clients = files.filter((f) => /^['"]use client['"]/.test(fs.readFileSync(path.join(ROOT, f), 'utf8').trimStart()));
    expect(clients).toContain('components/console/rate-card-editor.tsx');
    const found: string[] = [];
    for (const client of clients) {
      const seen = new Set([client]);
      const queue = [client];
      while (queue.length) {
        const file = queue.shift()!;
        for (const { specifier, kind } of importsOf(file, fs.readFileSync(path.join(ROOT, file), 'utf8'))) {
          if (kind === 'type') continue;
          if (specifier.startsWith('node:') || builtins.has(specifier.split('/')[0])) found.push(`${client}: ${file} imports ${specifier}`);
          const to = resolve(file, specifier);
          if (typeof to === 'string' && !seen.has(to)) {
            seen.add(to);
            queue.push(to);
          }
        }
      }
    }
    expect(found).toEqual([]);
  });

  it('pages every list through the one keyset helper', () => {
    const own = files.filter((f) => f !== 'lib/db/keyset.ts' && /\btoPage\(|\.limit\([^)]*\+ 1\)/.test(fs.readFileSync(path.join(ROOT, f), 'utf8')));
    expect(own, 'use keysetPage (lib/db/keyset.ts)').toEqual([]);
  });
});

describe('the checks themselves', () => {
  const layers = [
    { name: 'top', paths: ['a/'] },
    { name: 'middle', paths: ['b/', 'a/low.ts'] },
    { name: 'bottom', paths: ['c.ts'] },
  ];

  it('find an upward edge, type-only or lazy too, and place a file by its longest path', () => {
    expect(layerOf('a/low.ts', layers)).toBe(1);
    expect(layerOf('a/x.ts', layers)).toBe(0);
    expect(layerOf('elsewhere.ts', layers)).toBe(-1);
    const edges: Edge[] = [
      { from: 'a/x.ts', to: 'b/y.ts', kind: 'static' },
      { from: 'c.ts', to: 'b/y.ts', kind: 'type' },
      { from: 'a/low.ts', to: 'a/x.ts', kind: 'dynamic' },
    ];
    expect(upwardEdges(edges, layers)).toEqual(['c.ts (bottom) imports b/y.ts (middle), type', 'a/low.ts (middle) imports a/x.ts (top), dynamic']);
  });

  it('find a cycle through any number of files', () => {
    expect(cycles([{ from: 'x', to: 'y', kind: 'static' }, { from: 'y', to: 'z', kind: 'type' }, { from: 'z', to: 'x', kind: 'static' }, { from: 'z', to: 'w', kind: 'static' }])).toEqual([['x', 'y', 'z']]);
    expect(cycles([{ from: 'x', to: 'y', kind: 'static' }])).toEqual([]);
  });

  it('read every way of naming a module', () => {
    const text = `import a from './a'; import type { B } from './b'; export * from './c'; export type { D } from './d';
      const e = await import('./e'); type F = import('./f').F; import g = require('./g'); const h = require('h');`;
    expect(importsOf('x.ts', text)).toEqual([
      { specifier: './a', kind: 'static' },
      { specifier: './b', kind: 'type' },
      { specifier: './c', kind: 'static' },
      { specifier: './d', kind: 'type' },
      { specifier: './e', kind: 'dynamic' },
      { specifier: './f', kind: 'type' },
      { specifier: './g', kind: 'static' },
      { specifier: 'h', kind: 'static' },
    ]);
  });
});
