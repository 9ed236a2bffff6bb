import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { query, sql } from '../db/client';
import type { ConsoleUser } from './next-auth';
import { newCompany, useTestDatabase } from '../testing/harness';
import { databaseFingerprint } from '../testing/fingerprint';
import type { FormState } from './forms';

// The signed-in user comes from requireUser (lib/console/next-auth.ts): swapped for one the test sets, as in
// actions-isolation.test.ts. Next's cache invalidation needs a running server: a no-op here.
const session = vi.hoisted(() => ({ user: null as ConsoleUser | null }));
vi.mock('@/lib/console/next-auth', async (importOriginal) => ({
  ...(await importOriginal<typeof import('./next-auth')>()),
  requireUser: async () => session.user,
}));
vi.mock('next/cache', () => ({ revalidatePath: () => {}, revalidateTag: () => {} }));
// The request's headers, which actions read the client address from.
vi.mock('next/headers', () => ({ headers: async () => new Headers({ 'x-forwarded-for': '198.51.100.250' }) }));

const t = useTestDatabase();
const CONSOLE = path.resolve(__dirname, '../../app/console');

type Action = (...args: any[]) => Promise<FormState>;
async function loadActions(dir = CONSOLE, out = new Map<string, Action>()): Promise<Map<string, Action>> {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) await loadActions(full, out);
    else if (e.name === 'actions.ts') {
      for (const [name, value] of Object.entries((await import(full)) as Record<string, unknown>)) {
        if (typeof value === 'function') out.set(`${path.basename(dir)}.${name}`, value as Action);
      }
    }
  }
  return out;
}

const everything = () => databaseFingerprint(t.database.db);

type Fields = Record<string, string | string[]>;
const form = (fields: Fields) => {
  const fd = new FormData();
  for (const [k, v] of Object.entries(fields)) for (const x of [v].flat()) fd.append(k, x);
  return fd;
};
const idle: FormState = { status: 'idle' };
type Ids = { account: string; plan: string; webhook: string };

/** Every console form that takes text, filled in correctly; the ids are the signed-in company's own. */
const FORMS: Record<string, { fields: Fields; call: (a: Action, fd: FormData, ids: Ids) => Promise<FormState> }> = {
  'accounts.createAccountAction': { fields: { name: 'Ada', email: 'ada@example.com' }, call: (a, fd) => a(idle, fd) },
  'accounts.grantUnitsAction': { fields: { denomination: 'credits', amount: '5', reason: 'goodwill' }, call: (a, fd, ids) => a(ids.account, idle, fd) },
  // The first submit shows the preview; the second, with the figure it showed, changes the plan.
  'accounts.changePlanAction': {
    fields: { plan_id: 'PLAN' },
    call: async (a, fd, ids) => {
      const shown = await a(ids.account, idle, fd);
      if (!shown.confirmation) return shown;
      fd.set(shown.confirmation.name, shown.confirmation.value);
      return a(ids.account, idle, fd);
    },
  },
  'accounts.setRefillAction': { fields: { denomination: 'credits', amount: '10', usd_charge: '5', threshold: '1' }, call: (a, fd, ids) => a(ids.account, idle, fd) },
  'accounts.setSpendLimitsAction': {
    fields: { 'limits[0].denomination': 'credits', 'limits[0].period': 'day', 'limits[0].limit': '10', 'limits[0].action': 'reject' },
    call: (a, fd, ids) => a(ids.account, idle, fd),
  },
  'plans.createPlanAction': {
    fields: { name: 'Pro', charge_amount: '0', 'balances[0].denomination': 'credits', 'balances[0].amount': '5' },
    call: (a, fd) => a(idle, fd),
  },
  'team.inviteAdminAction': { fields: { email: 'invited@example.com', password: 'a long enough password' }, call: (a, fd) => a(idle, fd) },
  'team.changePasswordAction': { fields: { current_password: 'owner password 1', new_password: 'a brand new password' }, call: (a, fd) => a(idle, fd) },
  'webhooks.createWebhookAction': { fields: { url: 'http://127.0.0.1:9/hook', username: 'billing', password: 'hook password', topics: ['balance_change'] }, call: (a, fd) => a(idle, fd) },
  'portal.savePortalTopupsAction': { fields: { denomination_0: 'credits', units_0: '100', price_0: '5' }, call: (a, fd) => a(idle, fd) },
  'portal.saveUsagePropertiesAction': { fields: { 'usage_properties[0]': 'model', 'usage_properties[2]': 'region' }, call: (a, fd) => a(idle, fd) },
  'webhooks.setTopicsAction': { fields: { topics: ['balance_change', 'threshold'] }, call: (a, fd, ids) => a(ids.webhook, idle, fd) },
};
// Actions whose form has no fields (a button): their ids are bound on the server.
const NO_FIELDS = ['accounts.removeRefillAction', 'accounts.collectorLinkAction', 'accounts.portalLinkAction', 'accounts.revokePortalLinkAction', 'accounts.revokeAllPortalLinksAction', 'accounts.voidGrantAction', 'api-keys.issueKeyAction', 'api-keys.revokeKeyAction', 'team.removeAdminAction', 'webhooks.resendAction'];

describe('console forms', () => {
  let actions: Map<string, Action>;
  let ids: Ids;

  beforeAll(async () => {
    actions = await loadActions();
    const co = await newCompany(t, { name: 'Forms', password: 'owner password 1' });
    const ok = async (method: string, p: string, body?: unknown) => {
      const res = await co.call(method, p, body === undefined ? {} : { body });
      expect(res.status, `${method} ${p}`).toBe(200);
      return res.body.data;
    };
    const plan = await ok('POST', '/v1/companies/{company}/plans', { name: 'Free', balances: [{ amount: 10, denomination: 'credits' }] });
    const other = await ok('POST', '/v1/companies/{company}/plans', { name: 'Other', balances: [{ amount: 20, denomination: 'credits' }] });
    const account = await ok('POST', '/v1/companies/{company}/accounts', { name: 'Acct', email: 'acct@example.com', plan_id: plan.id });
    const webhook = await ok('POST', '/v1/companies/{company}/webhooks', { url: 'http://127.0.0.1:9/hook' });
    ids = { account: account.id, plan: other.id, webhook: webhook.id };
    const [admin] = await query<{ id: string; email: string; role: string }>(t.database.db, sql`select id, email, role from admins where company_id = ${co.company.id}`);
    session.user = { id: admin.id, email: admin.email, role: admin.role, companyId: co.company.id } as ConsoleUser;
  });

  it('cover every action', () => {
    expect([...actions.keys()].sort()).toEqual([...Object.keys(FORMS), ...NO_FIELDS].sort());
  });

  it('set the usage properties, blanks left out, and name the field a refused name was typed in', async () => {
    const action = actions.get('portal.saveUsagePropertiesAction')!;
    const saved = await action(idle, form({ 'usage_properties[0]': 'tier', 'usage_properties[1]': '', 'usage_properties[3]': 'model' }));
    expect(saved.status, JSON.stringify(saved)).toBe('ok');
    const stored = async () => (await query<{ p: string[] | string }>(t.database.db, sql`select usage_properties as p from companies where id = ${session.user!.companyId}`))[0].p;
    const read = async () => ((p) => (typeof p === 'string' ? JSON.parse(p) : p))(await stored());
    expect(await read()).toEqual(['tier', 'model']);
    const twice = await action(idle, form({ 'usage_properties[0]': 'model', 'usage_properties[2]': 'region', 'usage_properties[4]': 'model' }));
    expect(twice.status).toBe('error');
    expect(twice.errors?.map((e) => e.param)).toEqual(['usage_properties[4]']);
    expect(await read()).toEqual(['tier', 'model']);
  });

  // FormData holds USV strings (an unpaired surrogate is already U+FFFD when it arrives): NUL is
  // what a form can carry that PostgreSQL cannot store.
  it('refuse a NUL character in any field, on that field, and store nothing', async () => {
    for (const [name, { fields, call }] of Object.entries(FORMS)) {
      const action = actions.get(name)!;
      const filled = (f: Fields): Fields => Object.fromEntries(Object.entries(f).map(([k, v]) => [k, Array.isArray(v) ? v : v.replace('PLAN', ids.plan)]));
      for (const field of Object.keys(fields)) {
        for (const bad of ['\u0000', '\u0000\u0000']) {
          const values = filled(fields);
          const v = values[field];
          values[field] = Array.isArray(v) ? [...v, `x${bad}y`] : `${v.slice(0, 2)}${bad}${v.slice(2)}`;
          const before = await everything();
          const state = await call(action, form(values), ids);
          const what = `${name} ${field} ${JSON.stringify(bad)}`;
          expect(state.status, what).toBe('error');
          expect(state.errors, what).toEqual([{ param: field, message: `${field} must not contain NUL characters or unpaired surrogates.` }]);
          expect(await everything(), what).toEqual(before);
        }
      }
      // The same form, as typed, goes through (or on to the record it made): the refusal is the character's alone.
      const before = await everything();
      const state = await call(action, form(filled(fields)), ids).catch((err: { digest?: string }) => {
        if (!err.digest?.startsWith('NEXT_REDIRECT')) throw err;
        return { status: 'ok' } as FormState;
      });
      expect(state.errors, name).toBeUndefined();
      expect(state.status, name).toBe('ok');
      expect(await everything(), name).not.toEqual(before);
    }
  });
});
