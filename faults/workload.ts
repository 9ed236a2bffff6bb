import { stillInProgress, type Client, type Reply, type Verdict } from './client';
import type { Random } from './random';
import { sleep } from './processes';
import { HOLD_MS } from '../lib/billing/events/constants';

/**
 * A daily plan: each renewal charges the card and resets `credits`; a `call` costs one credit,
 * so a busy day goes negative (a crossing to notify).
 */
export const PLAN = { charge: 300, included: '3', denomination: 'credits', rule: { type: 'call', amount: '1' } };
/** A threshold refill on `tokens`: below 30, 40 tokens are bought for $1.50. */
export const REFILL = { denomination: 'tokens', threshold: '30', amount: '40', usd: 150 };
/** Holds and gated events draw on `gpu`, topped up by free grants. */
export const GPU = 'gpu';
/** Tokens start just above the threshold: the first few events cross it and buy a refill. */
export const START = { tokens: '36', gpu: '30' };
export const CROSSING_TOPICS = ['negative_balance', 'pause_balance', 'threshold'] as const;

export type World = { companyId: string; processorKey: string; planId: string; accounts: string[]; webhookId: string };

export type EventRecord = {
  key: string;
  accountId: string;
  denomination: string;
  cost: string;
  requested: 'complete' | 'pending';
  gate: boolean;
  via: 'single' | 'batch';
  /** Filled in once acknowledged. */
  id?: string;
  acked?: 'complete' | 'pending' | 'rejected';
  /** For a hold: the state its transition was acknowledged with. */
  settled?: 'complete' | 'cancelled';
};
export type GrantRecord = { key: string; accountId: string; denomination: string; amount: string; reason: string; acked: boolean };
export type DepositRecord = GrantRecord & { cents: number };

/** What the client knows: every request it made and what it was told. */
export class Model {
  readonly events = new Map<string, EventRecord>();
  readonly grants: GrantRecord[] = [];
  readonly deposits: DepositRecord[] = [];
  /** Acknowledged holds nobody has completed or cancelled yet. */
  readonly openHolds: EventRecord[] = [];
  readonly counts = { singles: 0, batches: 0, transitions: 0, advances: 0 };
}

const money = (cents: number) => (cents / 100).toFixed(2);

type Spec = { denomination: string; cost: string; gate: boolean; requested: 'complete' | 'pending'; body: Record<string, unknown> };

function eventSpec(rng: Random): Spec {
  const r = rng.next();
  if (r < 0.35) return { denomination: PLAN.denomination, cost: PLAN.rule.amount, gate: false, requested: 'complete', body: { type: PLAN.rule.type } };
  if (r < 0.65) {
    const cost = money(rng.int(100, 900));
    return { denomination: REFILL.denomination, cost, gate: false, requested: 'complete', body: { type: 'generate', cost_override_amount: cost, cost_override_denomination: REFILL.denomination } };
  }
  if (r < 0.82) {
    const cost = String(rng.int(1, 12));
    return { denomination: GPU, cost, gate: true, requested: 'complete', body: { type: 'render', cost_override_amount: cost, cost_override_denomination: GPU, gate_on_balance: true } };
  }
  const cost = String(rng.int(1, 6));
  const gate = rng.chance(0.5);
  return { denomination: GPU, cost, gate, requested: 'pending', body: { type: 'reserve', cost_override_amount: cost, cost_override_denomination: GPU, state: 'pending', ...(gate && { gate_on_balance: true }) } };
}

/** The per-account endpoint takes the override as two fields, the batch as one object. */
function batchItem(spec: Spec): Record<string, unknown> {
  const { cost_override_amount, cost_override_denomination, ...rest } = spec.body;
  return cost_override_amount === undefined ? rest : { ...rest, cost_override: { amount: cost_override_amount, denomination: cost_override_denomination } };
}

function sameCost(a: unknown, b: string): boolean {
  return a !== undefined && a !== null && Number(a) === Number(b);
}

/**
 * A client retries within its Idempotency-Keys' life (24 hours): the test clock, which jumps a
 * day at a time, never moves further than this past the start of a keyed request still waiting,
 * or past the latest try that the service answered with "still in progress" (see keyedRequest).
 * Nor in one advance further than this past the floor: a keyed request that starts while the
 * advance is under way may be claimed by a process still at the floor's time.
 */
const KEY_LIFE_MS = 23 * 3600_000;

export class Workload {
  private seq = 0;
  /**
   * A time no process's clock is behind: the shared clock before the advance under way (other
   * processes take a new time only when told). Keyed requests are dated with it.
   */
  private floor = 0;
  /**
   * A time no process's clock is ahead of: the furthest advance asked for (a second more, as the
   * advance is asked in whole seconds). A process that could not take the shared time freezes at
   * its own, which is behind it.
   */
  private ceiling = 0;
  private keyed = new Map<string, number>();

  constructor(
    private api: Client,
    private admin: Client,
    private world: World,
    readonly model: Model,
    private label: string,
    private appUrls: () => string[],
    private adminToken: string,
  ) {}

  async start(): Promise<void> {
    this.floor = this.ceiling = await this.clockNow();
    // The accounts started their daily period just now: move to an hour before it ends, so that
    // the conductor's first day (under the faults) renews every account.
    await this.advance(23 * 3600);
  }

  /**
   * Sends a request with an Idempotency-Key until it is acknowledged, holding the clock within the
   * key's life meanwhile. A try answered "still in progress" moves that hold up to the time the
   * try was sent: the service takes over a claim older than 60 s (test clock), so the claim it
   * saw is at most 60 s older than that time, and its 24 h life still covers the new hold. Without
   * this, a claim made near the hold's end by a process that then died could never age the 60 s
   * it needs to be taken over, and the request would wait forever.
   */
  private async keyedRequest(key: string, label: string, send: () => Promise<Reply>, decide: (r: Reply) => Verdict | undefined): Promise<Reply> {
    this.keyed.set(key, this.floor);
    try {
      return await this.api.untilAcknowledged(
        label,
        async () => {
          const sentAt = this.floor;
          const r = await send();
          if (stillInProgress(r)) this.keyed.set(key, Math.max(this.keyed.get(key) ?? sentAt, sentAt));
          return r;
        },
        decide,
      );
    } finally {
      this.keyed.delete(key);
    }
  }

  private key(kind: string): string {
    return `${this.label}-${kind}-${++this.seq}`;
  }

  /**
   * What the service acknowledged an event with. A hold whose first answer was lost, retried
   * after its hour ran out on the test clock, is answered with the state the stored event is in
   * now, cancelled: it was placed, and lapsed. That is taken only when some process's clock can
   * have passed its expiry; a hold answered cancelled any earlier is a defect.
   */
  private note(r: EventRecord, state: string, id: string | undefined, cost: unknown, createdAt?: string): void {
    const lapsed = state === 'cancelled' && r.requested === 'pending' && createdAt !== undefined && Date.parse(createdAt) + HOLD_MS <= this.ceiling;
    const acked = lapsed ? 'pending' : state;
    if (acked !== 'complete' && acked !== 'pending' && acked !== 'rejected') {
      this.api.defects.push(`event ${r.key}: acknowledged with state ${state}`);
      return;
    }
    r.acked = acked;
    r.id = id;
    if (!sameCost(cost, r.cost)) this.api.defects.push(`event ${r.key}: priced ${JSON.stringify(cost)}, expected ${r.cost}`);
    if (lapsed) r.settled = 'cancelled';
    else if (acked === 'pending') this.model.openHolds.push(r);
  }

  async singleEvent(rng: Random): Promise<void> {
    const spec = eventSpec(rng);
    const r: EventRecord = { key: this.key('ev'), accountId: rng.pick(this.world.accounts), denomination: spec.denomination, cost: spec.cost, requested: spec.requested, gate: spec.gate, via: 'single' };
    this.model.events.set(r.key, r);
    this.model.counts.singles++;
    const reply = await this.api.untilAcknowledged(
      `event ${r.key}`,
      () => this.api.send('POST', `/v1/accounts/${r.accountId}/events`, { body: { ...spec.body, idempotency_key: r.key } }),
      (a) => (a.status === 402 && r.gate && a.body?.error?.type === 'insufficient_balance' ? 'ack' : undefined),
    );
    if (reply.status === 200) this.note(r, reply.body.data.state, reply.body.data.id, reply.body.data.cost?.amount, reply.body.data.created_at);
    else if (reply.status === 402) this.note(r, 'rejected', reply.body.error.rejected_event_id, r.cost);
  }

  async batch(rng: Random): Promise<void> {
    const items = Array.from({ length: rng.int(2, 10) }, () => {
      const spec = eventSpec(rng);
      const r: EventRecord = { key: this.key('bt'), accountId: rng.pick(this.world.accounts), denomination: spec.denomination, cost: spec.cost, requested: spec.requested, gate: spec.gate, via: 'batch' };
      this.model.events.set(r.key, r);
      return { r, body: { ...batchItem(spec), account_id: r.accountId, idempotency_key: r.key } };
    });
    this.model.counts.batches++;
    const reply = await this.api.untilAcknowledged(`batch of ${items[0].r.key}`, () => this.api.send('POST', '/v1/events', { body: items.map((i) => i.body) }), () => undefined);
    if (reply.status !== 200) return;
    items.forEach(({ r }, i) => {
      const rec = reply.body.data[i];
      if (rec?.idempotency_key !== r.key) this.api.defects.push(`batch: item ${i} answered with ${rec?.idempotency_key}, expected ${r.key}`);
      else this.note(r, rec.state, rec.id, r.gate && rec.state === 'rejected' ? r.cost : rec.cost?.amount, rec.created_at);
    });
  }

  /** Completes or cancels a hold; after an unclear first try a 409 means it already moved. */
  async transition(rng: Random): Promise<void> {
    const hold = this.model.openHolds.splice(rng.int(0, this.model.openHolds.length - 1), 1)[0];
    if (!hold) return;
    const target = rng.chance(0.6) ? 'complete' : 'cancelled';
    this.model.counts.transitions++;
    const reply = await this.api.untilAcknowledged(
      `${target} ${hold.key}`,
      () => this.api.send('PUT', `/v1/events/${hold.id}`, { body: { state: target } }),
      (a) => (a.status === 409 && a.body?.error?.type === 'conflict' ? 'ack' : undefined),
    );
    if (reply.status === 200) {
      if (reply.body.data.state !== target) this.api.defects.push(`${target} ${hold.key}: answered with state ${reply.body.data.state}`);
      hold.settled = target;
      return;
    }
    if (reply.status !== 409) return;
    // Expired: the service says so, and the hold is cancelled. The check at the end reads it from
    // the database; a read now could reach a process whose test clock has not caught up with the
    // last advance yet, which still shows the hold pending for a moment.
    if (/expired at/.test(reply.body?.error?.message ?? '')) {
      hold.settled = 'cancelled';
      return;
    }
    // Moved already: by this request's earlier try (its answer lost).
    const read = await this.api.untilAcknowledged(`read ${hold.key}`, () => this.api.send('GET', `/v1/events/${hold.id}`), () => undefined);
    if (read.status !== 200) return;
    const state = read.body.data.state;
    if (state === 'complete' || state === 'cancelled') hold.settled = state;
    else this.api.defects.push(`${target} ${hold.key}: 409, yet the event is ${state}`);
  }

  async grant(rng: Random): Promise<void> {
    const key = this.key('gr');
    const g: GrantRecord = { key, accountId: rng.pick(this.world.accounts), denomination: GPU, amount: String(rng.int(5, 30)), reason: `grant ${key}`, acked: false };
    this.model.grants.push(g);
    const reply = await this.keyedRequest(
      key,
      `grant ${key}`,
      () => this.api.send('POST', `/v1/accounts/${g.accountId}/balance/${g.denomination}`, { body: { amount: g.amount, reason: g.reason }, headers: { 'Idempotency-Key': key } }),
      () => undefined,
    );
    g.acked = reply.status === 200;
  }

  async deposit(rng: Random): Promise<void> {
    const key = this.key('dp');
    // Small enough that token events outspend deposits: balances keep falling through the
    // threshold, so every scenario buys refills under its faults.
    const d: DepositRecord = { key, accountId: rng.pick(this.world.accounts), denomination: REFILL.denomination, amount: String(rng.int(1, 10)), cents: rng.int(50, 400), reason: `deposit ${key}`, acked: false };
    this.model.deposits.push(d);
    const reply = await this.keyedRequest(
      key,
      `deposit ${key}`,
      () =>
        this.api.send('POST', `/v1/accounts/${d.accountId}/deposit`, {
          body: { denomination: d.denomination, amount_to_deposit: d.amount, amount_to_charge: d.cents, reason: d.reason },
          headers: { 'Idempotency-Key': key },
        }),
      // 502 processor_error: the charge's outcome is not known yet; the same key picks it up.
      (a) => (a.status === 502 ? 'retry' : undefined),
    );
    d.acked = reply.status === 200;
  }

  /** One client: a random mix of everything a company backend sends, until told to stop. */
  async actor(rng: Random, running: () => boolean): Promise<void> {
    while (running()) {
      const r = rng.next();
      if (this.model.openHolds.length && r < 0.2) await this.transition(rng);
      else if (r < 0.5) await this.singleEvent(rng);
      else if (r < 0.72) await this.batch(rng);
      else if (r < 0.88) await this.grant(rng);
      else await this.deposit(rng);
      await sleep(rng.int(0, 20));
    }
  }

  /** The shared test clock's time, asked until some process answers. */
  async clockNow(): Promise<number> {
    const r = await this.admin.untilAcknowledged('read the test clock', () => this.admin.send('GET', '/v1/test_clock'), () => undefined);
    if (r.status !== 200) throw new Error(`cannot read the test clock: ${r.status} ${JSON.stringify(r.body ?? r.error)}`);
    return new Date(r.body.data.now).getTime();
  }

  /**
   * Moves the shared clock up to `seconds` ahead (less when a keyed request is waiting, see
   * KEY_LIFE_MS) and runs what falls due. The target is fixed first: a retry after a process
   * died mid-advance moves only what is left (the clock never goes back).
   */
  async advance(seconds: number): Promise<void> {
    const start = await this.clockNow();
    const oldest = Math.min(...this.keyed.values());
    const target = Math.min(start + seconds * 1000, oldest + KEY_LIFE_MS, this.floor + KEY_LIFE_MS);
    if (target <= start) return;
    this.model.counts.advances++;
    this.ceiling = Math.max(this.ceiling, target + 1000);
    await this.admin.untilAcknowledged(
      `advance ${seconds}s`,
      async (): Promise<Reply> => {
        const now = await this.clockNow();
        return this.admin.send('POST', '/v1/test_clock/advance', { body: { seconds: Math.max(0, Math.ceil((target - now) / 1000)) }, timeoutMs: 120_000 });
      },
      () => undefined,
    );
    // Every process takes the new time now rather than at its next worker tick.
    await Promise.all(this.appUrls().map((u) => fetch(`${u}/v1/test_clock`, { headers: { authorization: `Bearer ${this.adminToken}` }, signal: AbortSignal.timeout(5_000) }).catch(() => null)));
    this.floor = Math.max(this.floor, target);
  }

  /** Advances a day now and then: renewals charge, holds expire, retries come due. */
  async conductor(rng: Random, running: () => boolean): Promise<void> {
    for (let first = true; running(); first = false) {
      await sleep(first ? rng.int(200, 800) : rng.int(2_000, 4_000));
      if (!running()) break;
      // A day at first, so that every scenario renews under its faults.
      await this.advance(first || rng.chance(0.5) ? 86_400 + rng.int(0, 600) : rng.int(60, 900));
    }
  }
}

/** Company, plan, accounts on the plan (each charged at once), balances, refills and the webhook. */
export async function setUp(admin: Client, label: string, receiverUrl: string): Promise<{ world: World; api: Client; model: Model }> {
  const model = new Model();
  const ok = async (what: string, send: () => Promise<Reply>) => {
    const r = await admin.untilAcknowledged(what, send, () => undefined);
    if (r.status !== 200) throw new Error(`setting up, ${what}: ${r.status} ${JSON.stringify(r.body ?? r.error)}`);
    return r.body.data;
  };
  const processorKey = `sk_test_faults_${label}_${Date.now()}`;
  const company = await ok('company', () =>
    admin.send('POST', '/v1/companies', {
      body: { name: `Faults ${label}`, email: `${label}@faults.test`, processor_key: processorKey, processor_publishable_key: processorKey.replace('sk_', 'pk_') },
      headers: { 'Idempotency-Key': `${label}-company` },
    }),
  );
  const api = admin.as(`Basic ${Buffer.from(`${company.id}:${company.api_key}`).toString('base64')}`);
  const post = (what: string, path: string, body?: unknown, method = 'POST') => ok(what, () => api.send(method, path, { body, headers: { 'Idempotency-Key': `${label}-${what}` } }));
  const plan = await post('plan', `/v1/companies/${company.id}/plans`, {
    name: 'Daily',
    charge_amount: PLAN.charge,
    billing_period: 'day',
    overage_charge_mode: 'none',
    balances: [{ amount: PLAN.included, denomination: PLAN.denomination }],
    billing_rules: [{ type: PLAN.rule.type, amount: PLAN.rule.amount, denomination: PLAN.denomination }],
  });
  const accounts: string[] = [];
  for (let i = 0; i < 4; i++) {
    const account = await post(`account-${i}`, `/v1/companies/${company.id}/accounts`, { name: `Account ${i}`, email: `a${i}@faults.test`, plan_id: plan.id, token: 'tok_visa' });
    accounts.push(account.id);
    for (const [denomination, amount] of Object.entries(START)) {
      const reason = `grant ${label}-start-${i}-${denomination}`;
      await post(`start-${i}-${denomination}`, `/v1/accounts/${account.id}/balance/${denomination}`, { amount, reason });
      model.grants.push({ key: `${label}-start-${i}-${denomination}`, accountId: account.id, denomination, amount, reason, acked: true });
    }
    await post(`refill-${i}`, `/v1/accounts/${account.id}/balance/${REFILL.denomination}/auto_refill`, { amount: REFILL.amount, usd_charge: REFILL.usd, threshold: REFILL.threshold }, 'PUT');
  }
  const hook = await post('webhook', `/v1/companies/${company.id}/webhooks`, { url: receiverUrl });
  for (const topic of CROSSING_TOPICS) await post(`subscribe-${topic}`, `/v1/companies/${company.id}/webhooks/${hook.id}/subscribe/${topic}`);
  return { world: { companyId: company.id, processorKey, planId: plan.id, accounts, webhookId: hook.id }, api, model };
}
