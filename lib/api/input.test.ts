import { describe, expect, it } from 'vitest';
import { api, newCompany, useTestDatabase } from '../testing/harness';
import { buildOpenApiDocument } from './openapi/document';

process.env.ADMIN_TOKEN = 'input-admin-token';

const t = useTestDatabase();

describe('Idempotency-Key where it is not used', () => {
  it('is ignored on reads, public ones included, and still checked where it is honoured', async () => {
    const co = await newCompany(t);
    for (const [path, auth] of [['/v1/openapi.json', null], ['/health', null], ['/v1/companies', co.auth]] as const) {
      for (const key of ['', 'k'.repeat(300)]) {
        const res = await api('GET', path, { auth, headers: { 'idempotency-key': key } });
        expect(res.status, `${path} ${key.length}`).toBe(200);
      }
    }
    const post = await co.call('POST', '/v1/companies/{company}/api_keys', { headers: { 'idempotency-key': '' } });
    expect(post.status).toBe(400);
    expect(post.body.error.param).toBe('Idempotency-Key');
  });

  it("documents the operator's 409 for a key reused with another body", async () => {
    const headers = { 'idempotency-key': 'register-1' };
    const first = await api('POST', '/v1/companies', { auth: 'admin', headers, body: { name: 'One', email: 'one@example.com' } });
    expect(first.status).toBe(200);
    const again = await api('POST', '/v1/companies', { auth: 'admin', headers, body: { name: 'Two', email: 'two@example.com' } });
    expect(again.status).toBe(409);
    expect(again.body.error.type).toBe('conflict');
    const op = buildOpenApiDocument().paths['/v1/companies'].post;
    expect(op['x-error-types']).toContain('conflict');
    expect(op.responses['409']).toBeTruthy();
    expect(op.parameters.map((p: { $ref?: string }) => p.$ref)).toContain('#/components/parameters/IdempotencyKey');
  });
});
