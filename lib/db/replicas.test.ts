import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain ESM helper shared with the tests and benchmarks
import { promoteStandby, restartPostgres, startPostgres, startStandby, stopPostgres } from '../../scripts/pg.mjs';
import { api, newCompany, underSettings, type TestDb } from '../testing/harness';
import { captureLogs } from '../testing/log-capture';
import { sample } from '../testing/prometheus';
import { getDb, openPostgres, query, setDatabase, sql, type Database } from './client';
import { registerBillingTasks } from '../billing/tasks';

/**
 * A primary and a streaming standby of its own (PostgreSQL project only): a URL that names
 * several hosts writes to the writable one whichever is listed first; reads that may lag go to
 * DATABASE_REPLICA_URL, and to the primary while it is down; and while no host is writable the
 * API answers 503 with Retry-After, readiness names the hosts, and the service serves again as
 * soon as one is.
 */
const onPostgres = process.env.TEST_DB === 'postgres';
// Ports of their own, apart from the shared test cluster's (TEST_REPLICA_PORT and the next one).
const PRIMARY = Number(process.env.TEST_REPLICA_PORT ?? Number(process.env.TEST_PG_PORT ?? 24329) + 2000);
const STANDBY = PRIMARY + 1;
const CLOSED = PRIMARY + 2;
const names = { primary: 'billing-replicas', standby: 'billing-replicas-standby' };
const url = (...ports: number[]) => `postgres://postgres@${ports.map((p) => `127.0.0.1:${p}`).join(',')}/postgres`;
const METRICS_TOKEN = 'replica-metrics-token-0123';

describe.skipIf(!onPostgres)('a primary with a standby', () => {
  const opened: Database[] = [];
  let standbyDb: Database;
  let co: Awaited<ReturnType<typeof newCompany>>;
  let account: string;

  beforeAll(async () => {
    registerBillingTasks();
    startPostgres({ port: PRIMARY, name: names.primary });
    // The schema first, so the standby's base backup has it.
    const primary = await openPostgres(url(PRIMARY), { max: 1 });
    await primary.close();
    startStandby({ primaryPort: PRIMARY, port: STANDBY, name: names.standby, primaryName: names.primary });
    standbyDb = await openPostgres(url(STANDBY), { max: 1, migrate: false });
    opened.push(standbyDb);
  }, 120_000);

  afterAll(async () => {
    for (const d of opened) await d.close().catch(() => {});
    stopPostgres({ port: STANDBY, name: names.standby });
    stopPostgres({ port: PRIMARY, name: names.primary });
  });

  // Until the standby has replayed all the primary has written so far: compared with the primary's
  // own position, since a standby that has not received the latest WAL yet has replayed all it received.
  const replayed = async () => {
    const [{ lsn }] = await query<{ lsn: string }>(await getDb(), sql`select pg_current_wal_lsn()::text as lsn`);
    for (let i = 0; i < 400; i++) {
      const [r] = await query<{ caught_up: boolean }>(standbyDb.db, sql`select coalesce(pg_last_wal_replay_lsn() >= ${lsn}::pg_lsn, false) as caught_up`);
      if (r.caught_up) return;
      await new Promise((res) => setTimeout(res, 50));
    }
    throw new Error(`the standby did not replay up to ${lsn} within 20 s`);
  };

  it('writes to the writable host of the URL, though a standby is listed first', async () => {
    // With the standby first, the driver's own read-write check would settle on it: migrating
    // (a write) would then fail with "cannot execute ... in a read-only transaction".
    const database = await openPostgres(`${url(STANDBY, PRIMARY)}?target_session_attrs=read-write`, { max: 4 });
    opened.push(database);
    setDatabase(database);
    const [where] = await query<{ port: number; standby: boolean }>(database.db, sql`select inet_server_port() as port, pg_is_in_recovery() as standby`);
    expect(where).toEqual({ port: PRIMARY, standby: false });
    co = await newCompany({ database, kind: 'postgres', url: null } as TestDb);
    const created = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ann', email: 'ann@x.io' } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    account = created.body.data.id;
    expect((await co.call('POST', `/v1/accounts/${account}/balance/credits`, { body: { amount: 100, reason: 'start' } })).status).toBe(200);
  });

  // The two tests of the replica run with it set; the rest of the file without.
  const withReplica = { DATABASE_REPLICA_URL: url(STANDBY), METRICS_TOKEN };

  it('serves the event list from DATABASE_REPLICA_URL (it may lag), balances from the primary, and shows the lag on /metrics', underSettings(withReplica, async () => {
    await replayed();
    await query(standbyDb.db, sql`select pg_wal_replay_pause()`);
    try {
      const recorded = await co.call('POST', `/v1/accounts/${account}/events`, { body: { type: 'chat', cost_override_amount: 7, cost_override_denomination: 'credits' } });
      expect(recorded.status, JSON.stringify(recorded.body)).toBe(200);
      const id = recorded.body.data.id;
      // The balance the API answers is the primary's, at once.
      expect((await co.call('GET', `/v1/accounts/${account}/balance/credits`)).body.data.amount).toBe(93);
      // The replica has not replayed the event yet: the list, read there, does not have it.
      const lagging = await co.call('GET', '/v1/companies/{company}/events');
      expect(lagging.status).toBe(200);
      expect(lagging.body.data.map((e: { id: string }) => e.id)).not.toContain(id);
      // Received, not replayed: the lag /metrics shows.
      for (let i = 0; i < 100; i++) {
        const [r] = await query<{ behind: boolean }>(standbyDb.db, sql`select pg_last_wal_receive_lsn() > pg_last_wal_replay_lsn() as behind`);
        if (r.behind) break;
        await new Promise((res) => setTimeout(res, 50));
      }
      const metrics = await api('GET', '/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      expect(metrics.status).toBe(200);
      expect(sample(metrics.body, 'billing_db_replica_up', { host: `127.0.0.1:${STANDBY}` })).toBe(1);
      expect(sample(metrics.body, 'billing_db_replica_lag_seconds', { host: `127.0.0.1:${STANDBY}` })).toBeGreaterThan(0);
    } finally {
      await query(standbyDb.db, sql`select pg_wal_replay_resume()`);
    }
    await replayed();
    const caughtUp = await co.call('GET', '/v1/companies/{company}/events');
    expect(caughtUp.body.data).toHaveLength(1);
    const metrics = await api('GET', '/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(sample(metrics.body, 'billing_db_replica_lag_seconds', { host: `127.0.0.1:${STANDBY}` })).toBe(0);
  }));

  it('reads from the primary while the replica is down, logging it once, and goes back to the replica when it answers', underSettings(withReplica, async () => {
    const logs = captureLogs('info');
    try {
      stopPostgres({ port: STANDBY, name: names.standby });
      const extra = await co.call('POST', `/v1/accounts/${account}/events`, { body: { type: 'chat', cost_override_amount: 1, cost_override_denomination: 'credits' } });
      expect(extra.status).toBe(200);
      for (let i = 0; i < 3; i++) {
        const listed = await co.call('GET', '/v1/companies/{company}/events');
        expect(listed.status, JSON.stringify(listed.body)).toBe(200);
        expect(listed.body.data.map((e: { id: string }) => e.id)).toContain(extra.body.data.id);
      }
      const metrics = await api('GET', '/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      expect(sample(metrics.body, 'billing_db_replica_up', { host: `127.0.0.1:${STANDBY}` })).toBe(0);
      expect(logs.lines.filter((l) => /DATABASE_REPLICA_URL does not answer/.test(String(l.msg)))).toHaveLength(1);

      restartPostgres({ port: STANDBY, name: names.standby });
      await replayed();
      await new Promise((r) => setTimeout(r, 2_100)); // the replica's health is looked at again every 2 s
      expect((await co.call('GET', '/v1/companies/{company}/events')).status).toBe(200);
      expect((await co.call('GET', '/v1/companies/{company}/events')).status).toBe(200);
      expect(logs.lines.filter((l) => /DATABASE_REPLICA_URL answers again/.test(String(l.msg)))).toHaveLength(1);
    } finally {
      logs.stop();
    }
  }));

  it('with no writable host: 503 with Retry-After (never 500), readiness names the hosts, one log line; serves again once one is writable, a keyed retry applied once', async () => {
    await replayed();
    // A URL whose hosts are the standby and a port nobody listens on.
    const none = await openPostgres(`${url(STANDBY, CLOSED)}?target_session_attrs=read-write`, { max: 2, migrate: false });
    opened.push(none);
    setDatabase(none);
    const logs = captureLogs('info');
    try {
      const grant = () => co.call('POST', `/v1/accounts/${account}/balance/credits`, { body: { amount: 5, reason: 'during the outage' }, headers: { 'Idempotency-Key': 'outage-grant-1' } });
      const refused = await grant();
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.body.error).toMatchObject({ type: 'service_unavailable', param: null, request_id: expect.stringMatching(/^req_/) });
      const ready = await api('GET', '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.error.message).toBe(`No writable host among the 2 of DATABASE_URL: 127.0.0.1:${STANDBY} (standby), 127.0.0.1:${CLOSED} (connection refused).`);
      const named = logs.lines.filter((l) => /^No writable host among/.test(String(l.msg)));
      expect(named).toHaveLength(1);
      expect(named[0]).toMatchObject({ level: 'error', hosts_tried: [`127.0.0.1:${STANDBY} (standby)`, `127.0.0.1:${CLOSED} (connection refused)`] });
      expect(logs.text()).not.toMatch(/"level":"(error|fatal)".*"msg":"request failed"/);

      // The standby becomes the primary: the same process serves, and the keyed retry applies once.
      promoteStandby({ port: STANDBY, name: names.standby });
      let retried = await grant();
      for (let i = 0; i < 20 && retried.status === 503; i++) retried = await grant();
      expect(retried.status, JSON.stringify(retried.body)).toBe(200);
      expect((await grant()).headers.get('idempotent-replayed')).toBe('true');
      expect((await api('GET', '/readyz')).status).toBe(200);
      expect((await co.call('GET', `/v1/accounts/${account}/balance/credits`)).body.data.amount).toBe(92 + 5);
      expect(logs.lines.some((l) => String(l.msg) === `DATABASE_URL: connections go to 127.0.0.1:${STANDBY} (primary) now`)).toBe(true);
    } finally {
      logs.stop();
    }
  });
});
