import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument, type Json } from '../../lib/api/openapi/document';
import { generateSdkSources, withoutAliases } from '../generate';
import { operations } from '../src/operations';

const sdk = path.resolve(__dirname, '..');

/**
 * Operations the SDK does not offer as resource methods, and why. The low-level
 * `billing.request(method, path)` reaches them (and any operation) all the same.
 */
const NO_METHOD: Record<string, string> = {
  getHealth: 'a probe for load balancers, not an integration call',
  getLiveness: 'a probe for load balancers, not an integration call',
  getReadiness: 'a probe for load balancers, not an integration call',
  getOpenApiDocument: 'the document the SDK is generated from',
  listWebhooks: 'the same list as listCompanyWebhooks (webhooks.list), at a shorter path',
};

// The generated sources hold whatever the document says; they run the same on either database.
describe('the SDK against the OpenAPI document', () => {
  it('the committed generated sources are what the document gives now (else run npm run sdk:generate)', async () => {
    for (const [file, text] of Object.entries(await generateSdkSources())) {
      const committed = fs.readFileSync(path.join(sdk, file), 'utf8');
      expect(committed === text, `sdk/${file} is out of date with the OpenAPI document: run npm run sdk:generate`).toBe(true);
    }
  });

  it('every operation of the document is a resource method, or is listed here with the reason it is not', () => {
    const source = fs.readFileSync(path.join(sdk, 'src/resources.ts'), 'utf8');
    const called = new Set<string>();
    for (const m of source.matchAll(/\.request\(\s*'(\w+)',\s*'([^']+)'/g)) called.add(`${m[1]} ${m[2]}`);
    for (const m of source.matchAll(/\.paginate\(\s*'([^']+)'/g)) called.add(`get ${m[1]}`);

    // Aliases (x-alias-of) are left out of the SDK: it calls their canonical operations.
    const full = buildOpenApiDocument();
    const doc = withoutAliases(full);
    const aliases = Object.values(full.paths as Record<string, Json>).flatMap((item) => Object.values(item as Record<string, Json>)).filter((op) => op['x-alias-of']);
    expect(aliases.length).toBeGreaterThan(0);
    for (const op of aliases) expect(operations, `${op.operationId} is an alias`).not.toHaveProperty(op.operationId);
    for (const op of aliases) expect(operations, `the canonical operation of ${op.operationId}`).toHaveProperty(op['x-alias-of']);
    const documented = new Map<string, string>();
    for (const [p, item] of Object.entries(doc.paths as Record<string, Json>)) {
      for (const [method, op] of Object.entries(item as Record<string, Json>)) documented.set(`${method} ${p}`, op.operationId);
    }
    const missing = [...documented].filter(([route, id]) => !called.has(route) && !NO_METHOD[id]).map(([route, id]) => `${id} (${route})`);
    expect(missing, 'operations without a method in sdk/src/resources.ts: add one to its resource group').toEqual([]);
    expect([...called].filter((route) => !documented.has(route)), 'methods calling a path the document does not have').toEqual([]);
    for (const id of Object.keys(NO_METHOD)) expect(operations, `${id} is listed as having no method but is not documented`).toHaveProperty(id);
    expect(Object.keys(operations).length).toBe(documented.size);
  });
});
