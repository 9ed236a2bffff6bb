import { afterAll, describe, expect, it } from 'vitest';
import { api, useTestDatabase } from './testing/harness';
import { openEmbedded, openPostgres, setDatabase, type Database } from './db/client';
import { markStopping } from './probes';

const t = useTestDatabase();

describe('the probes', () => {
  const opened: Database[] = [];
  afterAll(async () => {
    for (const d of opened) await d.close();
  });
  const use = (database: Database) => {
    opened.push(database);
    setDatabase(database);
  };

  it('liveness answers without a database; readiness says why it is not ready: migrations, then the database', async () => {
    use(await openEmbedded(null, { migrate: false }));
    const live = await api('GET', '/livez');
    expect(live.status).toBe(200);
    expect(live.body).toEqual({ data: { status: 'ok' } });
    expect(live.headers.get('request-id')).toMatch(/^req_/);
    for (const path of ['/readyz', '/health']) {
      const res = await api('GET', path);
      expect(res.status, path).toBe(503);
      expect(res.body.error).toMatchObject({ type: 'service_unavailable', param: null, message: expect.stringMatching(/^\d+ migration\(s\) not applied \(first: 0000_\w+\): run npm run db:migrate\.$/) });
      expect(res.body.error.request_id).toBe(res.headers.get('request-id'));
    }

    // A PostgreSQL that does not answer.
    use(await openPostgres('postgres://nobody@127.0.0.1:1/none', { max: 1, migrate: false }));
    const down = await api('GET', '/readyz');
    expect(down.status).toBe(503);
    expect(down.body.error.message).toMatch(/^The database does not answer/);
    expect((await api('GET', '/livez')).status).toBe(200);
  });

  it('readiness answers 200 with every migration applied, and 503 from the moment the process stops', async () => {
    setDatabase(t.database);
    for (const path of ['/readyz', '/health']) {
      const res = await api('GET', path);
      expect(res.status, path).toBe(200);
      expect(res.body).toEqual({ data: { status: 'ok', database: t.kind } });
    }
    expect((await api('POST', '/readyz')).status).toBe(404);
    markStopping();
    const stopping = await api('GET', '/readyz');
    expect(stopping.status).toBe(503);
    expect(stopping.body.error).toMatchObject({ type: 'service_unavailable', message: 'The service is shutting down.' });
    expect((await api('GET', '/health')).status).toBe(503);
    expect((await api('GET', '/livez')).status).toBe(200);
  });
});
