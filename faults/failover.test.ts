/**
 * `npm run test:failover`: the service on a PostgreSQL cluster with automatic failover (Patroni
 * with etcd, scripts/ha-cluster.mjs): a primary and a synchronous standby on this machine, two
 * app processes and a worker (the built server and worker bundle), under the fault suite's
 * retrying load (events, batches, holds, grants, deposits and threshold refills charging the
 * local Stripe server, every request retried with its idempotency keys until answered). The
 * primary's PostgreSQL is killed with SIGKILL twice, once on each node; Patroni promotes the
 * standby each time and the killed node comes back as the new standby. Then the suite's checks
 * (faults/checks.ts) and one line:
 *
 *   FAILOVER {"acked":…,"lost":0,"duplicated":0,"kills":2,"max_unavailable_s":…}
 *
 * The test fails (a non-zero exit) on any loss or duplicate, any 500, a 503 without Retry-After,
 * a kill the service took more than 30 s to answer again after, or a failed invariant.
 * FAILOVER_LOAD_S sets the seconds of load before, between and after the kills (default 6);
 * HA_PORT_BASE the cluster's ports (scripts/ha-cluster.mjs) and, above them, the app processes',
 * the local Stripe server's and the receiver's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain ESM helper shared with the benchmarks
import { ensureHaPackages, haDatabaseUrl, isHealthy, killPostgres, primaryNode, startHaCluster, stopHaCluster, waitHealthy } from '../scripts/ha-cluster.mjs';
import { requireBuild, sleep } from './processes';
import { Random, runSeed } from './random';
import { ADMIN_TOKEN, runScenario, type FaultContext, type Scenario } from './scenario';

type Node = { name: string; pgPort: number };
type Layout = { base: number; nodes: Node[] };

const seed = runSeed();
const base = Number(process.env.HA_PORT_BASE ?? 25400);
const LOAD_S = Number(process.env.FAILOVER_LOAD_S ?? 6);
/** The service must answer writes again within this long of each kill. */
const MAX_UNAVAILABLE_S = 30;
let layout: Layout;
let scenario: Scenario | undefined;

type Kill = { node: string; promoted: string | null; unavailable_s: number; healthy_after_s: number };

/**
 * Writes a company backend sends while the primary dies: unbilled events with idempotency keys,
 * one every 100 ms per app process, each sent until answered. The time from a kill to the first
 * write acknowledged that was sent after it is the time the service was unavailable.
 */
class Prober {
  private running = true;
  private seq = 0;
  readonly acks: { sentAt: number; at: number }[] = [];
  readonly statuses: Record<string, number> = {};
  private loops: Promise<void>[] = [];

  constructor(
    private urls: string[],
    private auth: string,
    private account: string,
    private companyId: string,
  ) {}

  start(): void {
    this.loops = this.urls.map((url) => this.loop(url));
  }

  private async loop(url: string): Promise<void> {
    while (this.running) {
      const key = `probe-${++this.seq}`;
      const sentAt = Date.now();
      for (let attempt = 0; this.running; attempt++) {
        const status = await this.send(url, key);
        if (status === 200) {
          this.acks.push({ sentAt, at: Date.now() });
          break;
        }
        await sleep(100);
      }
      // A read the replica serves, alongside.
      if (this.seq % 5 === 0) await this.read(url);
      await sleep(100);
    }
  }

  private count(what: string): void {
    this.statuses[what] = (this.statuses[what] ?? 0) + 1;
  }

  private async send(url: string, key: string): Promise<number> {
    try {
      const res = await fetch(`${url}/v1/accounts/${this.account}/events`, {
        method: 'POST',
        headers: { authorization: this.auth, 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'probe', idempotency_key: key }),
        signal: AbortSignal.timeout(10_000),
      });
      const body = (await res.json().catch(() => null)) as { error?: { type?: string } } | null;
      this.count(String(res.status));
      if (res.status === 503 && (!res.headers.get('retry-after') || body?.error?.type !== 'service_unavailable')) this.count('503 without Retry-After or service_unavailable');
      return res.status;
    } catch {
      this.count('no answer');
      return 0;
    }
  }

  private async read(url: string): Promise<void> {
    try {
      const res = await fetch(`${url}/v1/companies/${this.companyId}/events?limit=5`, { headers: { authorization: this.auth }, signal: AbortSignal.timeout(10_000) });
      await res.arrayBuffer();
      this.count(`read ${res.status}`);
    } catch {
      this.count('read no answer');
    }
  }

  /** Seconds from `t` to the first write sent after it that was acknowledged, waiting for one. */
  async answeringAfter(t: number, timeoutMs = 90_000): Promise<number> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const ack = this.acks.find((a) => a.sentAt >= t);
      if (ack) return (ack.at - t) / 1000;
      if (Date.now() > end) return Infinity;
      await sleep(100);
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }
}

async function postJson(url: string, path: string, auth: string, body: unknown): Promise<any> {
  for (let i = 0; ; i++) {
    const res = await fetch(`${url}${path}`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json', 'idempotency-key': `probe-setup-${path}` }, body: JSON.stringify(body) }).catch(() => null);
    if (res?.status === 200) return ((await res.json()) as { data: unknown }).data;
    if (i > 50) throw new Error(`setting up the probe: POST ${path} answered ${res?.status} ${await res?.text()}`);
    await sleep(200);
  }
}

beforeAll(async () => {
  requireBuild();
  // Patroni and etcd from the distribution's packages, on a new machine (as root with apt-get).
  ensureHaPackages();
  console.log(`[failover] seed ${seed} (replay with FAULTS_SEED=${seed}); cluster ports from ${base}`);
  const started = Date.now();
  layout = await startHaCluster({ base });
  console.log(`[failover] Patroni cluster up in ${((Date.now() - started) / 1000).toFixed(1)} s: ${layout.nodes.map((n) => `${n.name} :${n.pgPort}`).join(', ')}`);
}, 180_000);

afterAll(async () => {
  await scenario?.close();
  stopHaCluster({ base });
});

describe('the service across failovers (Patroni: a primary and a synchronous standby)', () => {
  it('loses nothing acknowledged, pays nothing twice, and answers again within 30 s of each SIGKILL of the primary', async () => {
    // Run again (--retry), the failed run's apps, local Stripe and receiver still hold their ports: stopped first.
    await scenario?.close();
    const kills: Kill[] = [];
    let prober: Prober | null = null;
    const seen = new Set<string>();
    const rng = new Random(seed);
    scenario = await runScenario({
      name: 'failover',
      rng: rng.fork('failover'),
      topology: { apps: 2, workers: 1 },
      databaseUrl: haDatabaseUrl(layout),
      // The app processes leave the time-driven work to the worker, and read lists from the standby.
      appEnv: { WORKER: '0', DATABASE_REPLICA_URL: haDatabaseUrl(layout, 'prefer-standby') },
      ports: { apps: [base + 30, base + 31], stripe: base + 40, receiver: base + 41 },
      faults: async (ctx: FaultContext) => {
        const urls = ctx.apps.map((a) => a.url);
        const admin = `Bearer ${ADMIN_TOKEN}`;
        const company = await postJson(urls[0], '/v1/companies', admin, { name: 'Probe', email: 'probe@failover.test' });
        const auth = `Basic ${Buffer.from(`${company.id}:${company.api_key}`).toString('base64')}`;
        const account = await postJson(urls[0], `/v1/companies/${company.id}/accounts`, auth, { name: 'Probe', email: 'probe@failover.test' });
        prober = new Prober(urls, auth, account.id, company.id);
        prober.start();
        await sleep(LOAD_S * 1000);
        for (let round = 0; round < 2; round++) {
          const primary = (await primaryNode(layout)) as Node | null;
          if (!primary) throw new Error('no primary before the kill');
          seen.add(primary.name);
          const pid = killPostgres(primary);
          const t = Date.now();
          ctx.log(`SIGKILL of ${primary.name}'s PostgreSQL (postmaster ${pid})`);
          const unavailable = await prober.answeringAfter(t);
          const promoted = ((await primaryNode(layout)) as Node | null)?.name ?? null;
          ctx.log(`writes answered again ${unavailable.toFixed(1)} s after the kill; primary now ${promoted}`);
          await waitHealthy(layout, 120_000);
          const healthy = (Date.now() - t) / 1000;
          ctx.log(`${primary.name} back as the synchronous standby ${healthy.toFixed(1)} s after the kill`);
          kills.push({ node: primary.name, promoted, unavailable_s: Math.round(unavailable * 10) / 10, healthy_after_s: Math.round(healthy * 10) / 10 });
          await sleep(LOAD_S * 1000);
        }
        await prober.stop();
      },
    });
    const { report, evidence } = scenario;
    const probe = prober as Prober | null;

    // Loss and duplicates, counted from the database against what the clients were told.
    const { sql, model, world } = evidence;
    const byKey = new Map<string, number>();
    for (const r of await sql<{ key: string; n: number }[]>`select idempotency_key as key, count(*)::int as n from events where company_id = ${world.companyId} group by 1`) byKey.set(r.key, r.n);
    const ledger = new Map<string, number>();
    for (const r of await sql<{ description: string; n: number }[]>`select description, count(*)::int as n from transactions where company_id = ${world.companyId} and type in ('grant', 'deposit') group by 1`) ledger.set(r.description, r.n);
    let acked = 0;
    let lost = 0;
    let duplicated = 0;
    for (const e of model.events.values()) {
      if (!e.acked) continue;
      acked++;
      const n = byKey.get(e.key) ?? 0;
      if (n === 0) lost++;
      if (n > 1) duplicated++;
    }
    for (const g of [...model.grants, ...model.deposits]) {
      if (!g.acked) continue;
      const n = ledger.get(g.reason) ?? 0;
      if (n === 0) lost++;
      if (n > 1) duplicated++;
    }
    // Paid refills: each paid charge credited exactly once (its own ledger row).
    const refills = await sql<{ id: string; rows: number }[]>`select c.id, (select count(*)::int from transactions t where t.charge_id = c.id) as rows from charges c where c.company_id = ${world.companyId} and c.reason = 'refill_threshold' and c.status = 'succeeded'`;
    for (const r of refills) {
      if (r.rows === 0) lost++;
      if (r.rows > 1) duplicated++;
    }
    const statuses = { ...report.stats.byOutcome };
    for (const [k, n] of Object.entries(probe?.statuses ?? {})) statuses[`probe ${k}`] = n;
    const internal = Object.entries(statuses).filter(([k]) => /(^|\s)500$/.test(k)).reduce((a, [, n]) => a + n, 0);
    const badUnavailable = Object.entries(statuses).filter(([k]) => k.endsWith('503 without Retry-After or service_unavailable')).reduce((a, [, n]) => a + n, 0);
    const maxUnavailable = Math.max(0, ...kills.map((k) => k.unavailable_s));
    const line = {
      acked,
      lost,
      duplicated,
      kills: kills.length,
      max_unavailable_s: maxUnavailable,
      refills_paid: refills.length,
      grants: model.grants.filter((g) => g.acked).length,
      deposits: model.deposits.filter((d) => d.acked).length,
      renewals_paid: report.counts.renewals_paid,
      answered_500: internal,
      answered_503: Object.entries(statuses).filter(([k]) => /(^|\s)503$/.test(k)).reduce((a, [, n]) => a + n, 0),
      failovers: kills,
      seconds: report.seconds,
      seed,
    };
    console.log(`FAILOVER ${JSON.stringify(line)}`);

    expect(report.failures, `FAULTS_SEED=${seed}:\n${report.failures.join('\n')}`).toEqual([]);
    expect({ lost, duplicated }).toEqual({ lost: 0, duplicated: 0 });
    expect(kills).toHaveLength(2);
    // Once on each node: the standby took over each time.
    expect(new Set(kills.map((k) => k.node)).size).toBe(2);
    for (const k of kills) expect(k.promoted, `a standby took over from ${k.node}`).not.toBe(k.node);
    for (const k of kills) expect(k.unavailable_s, `answering again after the kill of ${k.node}`).toBeLessThanOrEqual(MAX_UNAVAILABLE_S);
    expect(internal, `500s: ${JSON.stringify(statuses)}`).toBe(0);
    expect(badUnavailable, `503s without Retry-After: ${JSON.stringify(statuses)}`).toBe(0);
    expect(refills.length, 'threshold refills paid under the failovers').toBeGreaterThan(0);
    expect(acked).toBeGreaterThan(0);
    expect(await isHealthy(layout)).toBe(true);
  }, 600_000);
});
