import { describe, expect, it, vi } from 'vitest';
import { newCompany, useTestDatabase } from '@/lib/testing/harness';
import { withoutPrivateDestinations } from '@/lib/testing/destinations';
import { requireUser } from '@/lib/console/next-auth';
import { idle } from '@/lib/console/forms';
import { MAX_WEBHOOKS_PER_COMPANY } from '@/lib/billing/webhooks/webhooks';
import { createWebhookAction, setTopicsAction } from './actions';
import { eq } from 'drizzle-orm';
import { webhooks } from '@/lib/db/schema';
import { webhookPassword } from '@/lib/billing/webhooks/webhooks';

// The signed-in admin comes from a session cookie in the console; here it is the test's company.
vi.mock('@/lib/console/next-auth', () => ({ requireUser: vi.fn() }));
vi.mock('next/cache', () => ({ revalidatePath: () => {} }));
// A subscription that fails when asked to: the database refusing a write half-way.
const failing = { topic: null as string | null };
vi.mock('@/lib/billing/webhooks/webhooks', async (importOriginal) => {
  const real = await importOriginal<typeof import('@/lib/billing/webhooks/webhooks')>();
  return {
    ...real,
    subscribe: async (args: Parameters<typeof real.subscribe>[0]) => {
      if (args.topic === failing.topic) throw new Error('the database refused the write');
      return real.subscribe(args);
    },
  };
});

const t = useTestDatabase();

function form(url: string) {
  const fd = new FormData();
  fd.set('url', url);
  fd.append('topics', 'negative_balance');
  return fd;
}

describe('the console webhook form', () => {
  it('creates a webhook with its topics or not at all, and changes topics all or nothing', async () => {
    const co = await newCompany(t);
    vi.mocked(requireUser).mockResolvedValue({ id: 'u', email: 'owner@acme.test', companyId: co.company.id, companyName: 'Acme', role: 'owner' });
    const fd = form('https://hooks.example.com/whole');
    fd.append('topics', 'threshold');
    failing.topic = 'threshold';
    try {
      expect((await createWebhookAction(idle, fd)).status).toBe('error');
      // No webhook without its topics (and without its secret ever shown) is left behind.
      expect(await t.database.db.select().from(webhooks).where(eq(webhooks.companyId, co.company.id))).toEqual([]);

      failing.topic = null;
      expect((await createWebhookAction(idle, form('https://hooks.example.com/whole'))).status).toBe('ok');
      const [hook] = await t.database.db.select().from(webhooks).where(eq(webhooks.companyId, co.company.id));
      const topics = new FormData();
      topics.append('topics', 'pause_balance');
      topics.append('topics', 'threshold');
      failing.topic = 'threshold';
      expect((await setTopicsAction(hook.id, idle, topics)).status).toBe('error');
      // negative_balance is still subscribed, pause_balance was not added.
      expect((await co.call('GET', `/v1/companies/{company}/webhooks/${hook.id}/subscriptions`)).body.data.map((x: { topic: string }) => x.topic)).toEqual(['negative_balance']);
    } finally {
      failing.topic = null;
    }
  });

  it('keeps Basic credentials exactly as typed, spaces included, as the API does', async () => {
    const co = await newCompany(t);
    vi.mocked(requireUser).mockResolvedValue({ id: 'u', email: 'owner@acme.test', companyId: co.company.id, companyName: 'Acme', role: 'owner' });
    const fd = form('https://hooks.example.com/creds');
    fd.set('username', ' hook user');
    fd.set('password', ' pass word ');
    expect((await createWebhookAction(idle, fd)).status).toBe('ok');
    const [row] = await t.database.db.select().from(webhooks).where(eq(webhooks.companyId, co.company.id));
    expect(row.username).toBe(' hook user');
    expect(webhookPassword(row)).toBe(' pass word ');
  });

  it('refuses urls inside the network, and more webhooks than a company may have', async () => {
    const co = await newCompany(t);
    vi.mocked(requireUser).mockResolvedValue({ id: 'u', email: 'owner@acme.test', companyId: co.company.id, companyName: 'Acme', role: 'owner' });
    await withoutPrivateDestinations(async () => {
      for (const url of ['http://127.0.0.1:5432/', 'http://169.254.169.254/latest/', 'http://[::ffff:10.0.0.1]/', 'http://2130706433/', 'http://localhost:3000/']) {
        const state = await createWebhookAction(idle, form(url));
        expect(state, url).toMatchObject({ status: 'error', errors: [{ param: 'url', message: expect.stringMatching(/^url must not point to/) }] });
      }
      expect((await co.call('GET', '/v1/webhooks')).body.data).toEqual([]);

      for (let i = 0; i < MAX_WEBHOOKS_PER_COMPANY; i++) expect((await createWebhookAction(idle, form(`https://hooks.example.com/${i}`))).status).toBe('ok');
      const over = await createWebhookAction(idle, form('https://hooks.example.com/over'));
      expect(over).toMatchObject({ status: 'error', errors: [{ param: null, message: expect.stringContaining(`at most ${MAX_WEBHOOKS_PER_COMPANY} webhooks`) }] });
    });
  });
});
