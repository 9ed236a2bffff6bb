import fs from 'node:fs';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { query, sql } from '../db/client';
import { admins } from '../db/schema';
import type { ConsoleUser } from './next-auth';
import { newCompany, useTestDatabase } from '../testing/harness';
import { databaseFingerprint } from '../testing/fingerprint';
import type { FormState } from './forms';

/**
 * Server actions take the signed-in user from requireUser (lib/console/next-auth.ts), and only from there:
 * it is swapped here for a session the test sets. Without one it redirects to the sign-in
 * page, as the real one does. Next's cache invalidation needs a running server, so it is a no-op.
 */
const session = vi.hoisted(() => ({ user: null as ConsoleUser | null, asked: 0 }));
vi.mock('@/lib/console/next-auth', async (importOriginal) => {
  const { redirect } = await import('next/navigation');
  return {
    ...(await importOriginal<typeof import('./next-auth')>()),
    requireUser: async () => {
      session.asked++;
      if (!session.user) redirect('/console/sign-in');
      return session.user;
    },
  };
});
vi.mock('next/cache', () => ({ revalidatePath: () => {}, revalidateTag: () => {} }));
// The request's headers, which actions read the client address from.
vi.mock('next/headers', () => ({ headers: async () => new Headers({ 'x-forwarded-for': '198.51.100.250' }) }));

const t = useTestDatabase();

const CONSOLE = path.resolve(__dirname, '../../app/console');

function actionFiles(dir = CONSOLE): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return actionFiles(full);
    return e.name === 'actions.ts' ? [full] : [];
  });
}

type Action = (...args: any[]) => Promise<FormState>;
/** Every exported function of every app/console/**\/actions.ts, named `<folder>.<export>`. */
async function loadActions(): Promise<Map<string, Action>> {
  const out = new Map<string, Action>();
  for (const file of actionFiles()) {
    const mod = (await import(file)) as Record<string, unknown>;
    for (const [name, value] of Object.entries(mod)) {
      if (typeof value === 'function') out.set(`${path.basename(path.dirname(file))}.${name}`, value as Action);
    }
  }
  return out;
}

const form = (fields: Record<string, string | string[]> = {}) => {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) for (const x of [v].flat()) fd.append(k, x);
  return fd;
};
const idle: FormState = { status: 'idle' };

/** Everything stored, row by row: any change anywhere shows. */
const everything = () => databaseFingerprint(t.database.db);

type World = {
  own: { account: string; plan: string; webhook: string };
  other: { account: string; plan: string; webhook: string; delivery: string; key: string; admin: string; portalLink: string; grant: string };
};

/**
 * Each action with the calls that try it on another company's records. An action that takes
 * no ids acts on the signed-in company alone: it is called normally, and must leave every
 * other company's rows as they were. A new action fails "covers every action" until listed.
 */
const FOREIGN: Record<string, (w: World) => { call: (a: Action) => Promise<FormState>; what: string }[]> = {
  'accounts.createAccountAction': (w) => [{ what: 'plan', call: (a) => a(idle, form({ name: 'Ada', email: 'ada@example.com', plan_id: w.other.plan })) }],
  'accounts.grantUnitsAction': (w) => [{ what: 'account', call: (a) => a(w.other.account, idle, form({ denomination: 'credits', amount: '5' })) }],
  'accounts.changePlanAction': (w) => [
    { what: 'account', call: (a) => a(w.other.account, idle, form({ plan_id: w.own.plan })) },
    { what: 'plan', call: (a) => a(w.own.account, idle, form({ plan_id: w.other.plan })) },
  ],
  'accounts.setRefillAction': (w) => [{ what: 'account', call: (a) => a(w.other.account, idle, form({ denomination: 'credits', amount: '10', usd_charge: '5', threshold: '1' })) }],
  'accounts.removeRefillAction': (w) => [{ what: 'account', call: (a) => a(w.other.account, 'credits', idle, form()) }],
  'accounts.setSpendLimitsAction': (w) => [{ what: 'account', call: (a) => a(w.other.account, idle, form({ 'limits[0].denomination': 'credits', 'limits[0].period': 'day', 'limits[0].limit': '10', 'limits[0].action': 'reject' })) }],
  'accounts.collectorLinkAction': (w) => [{ what: 'account', call: (a) => a(w.other.account, idle, form()) }],
  'accounts.portalLinkAction': (w) => [{ what: 'account', call: (a) => a(w.other.account, idle, form()) }],
  'accounts.revokePortalLinkAction': (w) => [{ what: 'portal link', call: (a) => a(w.own.account, w.other.portalLink, idle, form()) }],
  'accounts.revokeAllPortalLinksAction': (w) => [{ what: 'account', call: (a) => a(w.other.account, idle, form()) }],
  'accounts.voidGrantAction': (w) => [
    { what: 'grant', call: (a) => a(w.own.account, w.other.grant, idle, form()) },
    { what: 'grant', call: (a) => a(w.other.account, w.other.grant, idle, form()) },
  ],
  'team.removeAdminAction': (w) => [{ what: 'admin', call: (a) => a(w.other.admin, idle, form()) }],
  'api-keys.revokeKeyAction': (w) => [{ what: 'API key', call: (a) => a(w.other.key, idle, form()) }],
  'webhooks.setTopicsAction': (w) => [
    { what: 'webhook', call: (a) => a(w.other.webhook, idle, form({ topics: ['balance_change', 'threshold'] })) },
    { what: 'webhook', call: (a) => a(w.other.webhook, idle, form()) },
  ],
  'webhooks.resendAction': (w) => [
    { what: 'webhook', call: (a) => a(w.other.webhook, w.other.delivery, idle, form()) },
    { what: 'delivery', call: (a) => a(w.own.webhook, w.other.delivery, idle, form()) },
  ],
};
const OWN_COMPANY_ONLY: Record<string, (w: World) => (a: Action) => Promise<FormState>> = {
  'accounts.createAccountAction': () => (a) => a(idle, form({ name: 'Own', email: 'own@example.com' })),
  'api-keys.issueKeyAction': () => (a) => a(idle, form()),
  'plans.createPlanAction': () => (a) => a(idle, form({ name: 'Own plan', charge_amount: '0', 'balances[0].denomination': 'credits', 'balances[0].amount': '5' })),
  'team.inviteAdminAction': () => (a) => a(idle, form({ email: 'invited@example.com', password: 'a long enough password' })),
  'team.changePasswordAction': () => (a) => a(idle, form({ current_password: 'owner password 1', new_password: 'a brand new password' })),
  'webhooks.createWebhookAction': () => (a) => a(idle, form({ url: 'http://127.0.0.1:9/own', topics: ['balance_change'] })),
  'portal.savePortalTopupsAction': () => (a) => a(idle, form({ denomination_0: 'credits', units_0: '100', price_0: '5' })),
  'portal.saveUsagePropertiesAction': () => (a) => a(idle, form({ 'usage_properties[0]': 'model' })),
};

describe("console server actions with another company's ids", () => {
  let actions: Map<string, Action>;
  let world: World;
  let a: Awaited<ReturnType<typeof newCompany>>;
  let b: Awaited<ReturnType<typeof newCompany>>;

  beforeAll(async () => {
    actions = await loadActions();
    a = await newCompany(t, { name: 'Console A', password: 'owner password 1' });
    b = await newCompany(t, { name: 'Console B', password: 'owner password 2' });
    const setUp = async (co: typeof a) => {
      const ok = async (method: string, p: string, body?: unknown) => {
        const res = await co.call(method, p, body === undefined ? {} : { body });
        expect(res.status, `${method} ${p}`).toBe(200);
        return res.body.data;
      };
      const plan = await ok('POST', '/v1/companies/{company}/plans', { name: 'Free', balances: [{ amount: 10, denomination: 'credits' }] });
      const account = await ok('POST', '/v1/companies/{company}/accounts', { name: 'Acct', email: 'acct@example.com', plan_id: plan.id });
      const webhook = await ok('POST', '/v1/companies/{company}/webhooks', { url: 'http://127.0.0.1:9/hook' });
      await ok('POST', `/v1/companies/{company}/webhooks/${webhook.id}/subscribe/balance_change`);
      await ok('POST', `/v1/accounts/${account.id}/events`, { type: 'use', cost_override_amount: 1, cost_override_denomination: 'credits' });
      const [delivery] = await ok('GET', `/v1/companies/{company}/webhooks/${webhook.id}/deliveries`);
      const key = await ok('POST', '/v1/companies/{company}/api_keys');
      const portalLink = await ok('POST', `/v1/accounts/${account.id}/portal_link`);
      const grant = await ok('POST', `/v1/accounts/${account.id}/balance/credits/grants`, { amount: 5 });
      const [admin] = await t.database.db.select().from(admins).where(eq(admins.companyId, co.company.id));
      return { account: account.id, plan: plan.id, webhook: webhook.id, delivery: delivery.id, key: key.id, admin: admin.id, portalLink: portalLink.id, grant: grant.id };
    };
    world = { own: await setUp(a), other: await setUp(b) };
    const [owner] = await t.database.db.select().from(admins).where(eq(admins.companyId, a.company.id));
    session.user = { id: owner.id, email: owner.email, companyId: a.company.id, companyName: 'Console A', role: owner.role };
  });

  it('covers every action exported by app/console/**/actions.ts', () => {
    expect(actions.size).toBeGreaterThan(10);
    const covered = new Set([...Object.keys(FOREIGN), ...Object.keys(OWN_COMPANY_ONLY)]);
    expect([...actions.keys()].filter((k) => !covered.has(k))).toEqual([]);
    expect([...covered].filter((k) => !actions.has(k))).toEqual([]);
  });

  it('send a caller without a session to the sign-in page, and change nothing', async () => {
    const user = session.user;
    session.user = null;
    try {
      const before = await everything();
      for (const [name, action] of actions) {
        const asked = session.asked;
        const calls = [...(FOREIGN[name]?.(world).map((c) => c.call) ?? []), ...(OWN_COMPANY_ONLY[name] ? [OWN_COMPANY_ONLY[name](world)] : [])];
        for (const call of calls) {
          const err = await call(action).then(
            () => null,
            (e: unknown) => e,
          );
          expect((err as { digest?: string })?.digest?.split(';')[2], name).toBe('/console/sign-in');
        }
        expect(session.asked, `${name} asks for the signed-in user`).toBeGreaterThan(asked);
      }
      expect(await everything()).toEqual(before);
    } finally {
      session.user = user;
    }
  });

  it('answer not-found for every id of another company, and change nothing', async () => {
    let tried = 0;
    for (const [name, cases] of Object.entries(FOREIGN)) {
      for (const { call, what } of cases(world)) {
        const before = await everything();
        const state = await call(actions.get(name)!);
        expect(state.status, `${name} (${what})`).toBe('error');
        expect(state.errors?.[0]?.message, `${name} (${what})`).toBe(`No such ${what}.`);
        expect(state.secret, name).toBeUndefined();
        expect(await everything(), `${name} (${what}) changed something`).toEqual(before);
        tried++;
      }
    }
    expect(tried).toBeGreaterThanOrEqual(12);
  });

  it("that take no ids act on the signed-in company alone, leaving another company's rows as they were", async () => {
    const otherRows = async () => {
      const id = b.company.id;
      const tables = ['accounts', 'plans', 'api_keys', 'admins', 'webhooks', 'webhook_subscriptions', 'balances', 'events', 'companies'];
      const rows = await query<{ k: string; v: string }>(
        t.database.db,
        sql.raw(tables.map((n) => `select '${n}' as k, coalesce(md5(string_agg(t::text, '|' order by t::text)), '') as v from "${n}" t where ${n === 'companies' ? 'id' : 'company_id'} = '${id}'`).join(' union all ')),
      );
      return Object.fromEntries(rows.map((r) => [r.k, r.v]));
    };
    for (const [name, make] of Object.entries(OWN_COMPANY_ONLY)) {
      const before = await otherRows();
      const state = await make(world)(actions.get(name)!).catch((e: { digest?: string }) => {
        // createPlanAction goes to the new plan's page; a password change ends the session.
        const to = e.digest?.split(';')[2] ?? '';
        expect(to, name).toMatch(name === 'team.changePasswordAction' ? /^\/console\/sign-in\?notice=password-changed$/ : /^\/console\/plans\/p_/);
        return { status: 'ok' } as FormState;
      });
      expect(state.status, `${name}: ${JSON.stringify(state.errors)}`).toBe('ok');
      expect(await otherRows(), name).toEqual(before);
    }
  });
});
