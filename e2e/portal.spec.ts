import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { expect, test, type APIRequestContext, type Page, type TestInfo } from '@playwright/test';
import { api, section, signIn, uniq } from './console-helpers';

// Screenshots: test-results/e2e/<test>/portal-*-{mobile,desktop}.png (Playwright's output directory).
const MOBILE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 900 };

async function shots(page: Page, info: TestInfo, name: string) {
  for (const [label, size] of [['mobile', MOBILE], ['desktop', DESKTOP]] as const) {
    await page.setViewportSize(size);
    await page.waitForLoadState('networkidle');
    await page.screenshot({ path: info.outputPath(`portal-${name}-${label}.png`), fullPage: true });
  }
  await page.setViewportSize(MOBILE);
}

async function fillCard(page: Page, number: string) {
  await page.getByLabel('Card number').fill(number);
  await page.getByLabel('Expiration date').fill('12 / 34');
  await page.getByLabel('CVC').fill('123');
}

test('an admin makes a portal link in the console; the customer sees balances, plan and charges and replaces the card', async ({ page, request }, info) => {
  test.setTimeout(120_000);
  const call = api(request);
  const name = uniq('Portal Ada');
  const plan = await call('post', '/v1/companies/{company}/plans', { name: uniq('Growth'), charge_amount: 2900, balances: [{ amount: 5000, denomination: 'tokens' }] });
  expect(plan.status).toBe(200);
  const created = await call('post', '/v1/companies/{company}/accounts', { name, email: 'ada@example.com', plan_id: plan.body.data.id, token: 'tok_visa' });
  expect(created.status).toBe(200);
  const id: string = created.body.data.id;
  expect((await call('post', `/v1/accounts/${id}/deposit`, { denomination: 'credits', amount_to_deposit: 250, amount_to_charge: 1200 })).status).toBe(200);
  expect((await call('post', `/v1/accounts/${id}/events`, { type: 'hold', cost_override_amount: '40.5', cost_override_denomination: 'tokens', state: 'pending' })).status).toBe(200);

  let url = '';
  await test.step('the console shows a fresh portal link, ready to copy', async () => {
    await signIn(page);
    await page.goto(`/console/accounts/${id}`);
    const portal = section(page, 'Portal link');
    await portal.getByRole('button', { name: 'Portal link' }).click();
    const box = portal.getByLabel(`Customer portal link for ${name}`);
    await expect(box).toHaveValue(/\/portal\/[A-Za-z0-9_-]{43}$/);
    await expect(portal.getByRole('button', { name: 'Copy' })).toBeVisible();
    await expect(portal).toContainText('it works until');
    url = await box.inputValue();
  });

  await test.step('the customer opens it without signing in', async () => {
    await page.context().clearCookies();
    await page.setViewportSize(MOBILE);
    const res = await page.goto(url);
    expect(res?.status()).toBe(200);
    const headers = await res!.allHeaders();
    expect(headers['x-frame-options']).toBe('DENY');
    expect(headers['x-content-type-options']).toBe('nosniff');
    // The token is in the path: no Referer carries it to Stripe.js or anywhere else.
    await expect(page.locator('meta[name="referrer"]')).toHaveAttribute('content', 'no-referrer');
    await expect(page.getByRole('heading', { level: 1, name })).toBeVisible();
    await expect(page.getByText('Demo Company')).toBeVisible();
    const tokens = page.getByRole('listitem', { name: 'tokens balance' });
    await expect(tokens).toContainText('Available4,959.5');
    await expect(tokens).toContainText('Balance5,000');
    await expect(tokens).toContainText('Pending40.5');
    await expect(page.getByRole('listitem', { name: 'credits balance' })).toContainText('Available250');
    const planCard = section(page, 'Plan');
    await expect(planCard).toContainText(plan.body.data.name);
    await expect(planCard).toContainText('$29.00 a month');
    await expect(planCard).toContainText('Active');
    await expect(planCard).toContainText(`Next renewal${new Date(created.body.data.next_plan_renewal).toLocaleDateString('en-US', { year: 'numeric', month: 'long', day: 'numeric', timeZone: 'UTC' })}`);
    const charges = page.getByRole('list', { name: 'Charges, newest first' }).getByRole('listitem');
    await expect(charges).toHaveCount(2);
    await expect(charges.nth(0)).toContainText('$12.00');
    await expect(charges.nth(0)).toContainText('Paid');
    await expect(charges.nth(1)).toContainText('$29.00');
    await expect(section(page, 'Payment card')).toContainText('VISA ending in 4242');
    await shots(page, info, 'overview');
  });

  await test.step('the customer replaces the card', async () => {
    await expect(page.getByRole('heading', { level: 3, name: 'Replace your card' })).toBeVisible();
    await fillCard(page, '5555 5555 5555 4444');
    await page.getByRole('button', { name: 'Save new card' }).click();
    await expect(page.getByRole('status').filter({ hasText: 'mastercard card ending in 4444 is saved' })).toBeFocused();
    await expect(section(page, 'Payment card')).toContainText('MASTERCARD ending in 4444');
    expect((await call('get', `/v1/accounts/${id}`)).body.data.payment_method).toMatchObject({ brand: 'mastercard', last4: '4444' });
    await shots(page, info, 'card-replaced');
  });

  await test.step('the admin revokes the link in the console; the customer\'s page says so', async () => {
    await signIn(page);
    await page.goto(`/console/accounts/${id}`);
    const portal = section(page, 'Portal link');
    const live = portal.getByRole('list', { name: 'Live portal links' }).getByRole('listitem');
    await expect(live).toHaveCount(1);
    await live.getByRole('button', { name: 'Revoke' }).click();
    await live.getByRole('button', { name: 'Revoke this link' }).click();
    // The page reloads its list: the link is gone from it.
    await expect(portal.getByRole('list', { name: 'Live portal links' })).toHaveCount(0);
    await page.context().clearCookies();
    await page.goto(url);
    await expect(page.getByRole('status')).toContainText('This link was revoked by Demo Company');
    await expect(page.getByRole('button', { name: 'Save new card' })).toHaveCount(0);
  });

  await test.step('"Revoke all links" stops every live link of the account at once', async () => {
    const links = [await call('post', `/v1/accounts/${id}/portal_link`), await call('post', `/v1/accounts/${id}/portal_link`, { expires_in: 600 })];
    await signIn(page);
    await page.goto(`/console/accounts/${id}`);
    const portal = section(page, 'Portal link');
    await expect(portal.getByRole('list', { name: 'Live portal links' }).getByRole('listitem')).toHaveCount(2);
    await portal.getByRole('button', { name: 'Revoke all links' }).click();
    await portal.getByRole('button', { name: 'Revoke all 2' }).click();
    await expect(portal.getByRole('status').filter({ hasText: '2 portal links' })).toBeVisible();
    for (const link of links) {
      await page.goto(link.body.data.url);
      await expect(page.getByRole('status')).toContainText('This link was revoked');
    }
  });
});

/**
 * A renewal must fall due to make an account past due, and only the operator moves the clock:
 * this test starts a server of its own with the operator token and the test clock (and its own
 * local Stripe server), on a free port, for as long as it runs.
 */
async function startOperatorServer(): Promise<{ url: string; token: string; stop: () => Promise<void> }> {
  const port = await new Promise<number>((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const p = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(p));
    });
  });
  const dataDir = `.test-data/e2e-portal-${port}`;
  fs.rmSync(dataDir, { recursive: true, force: true });
  const url = `http://127.0.0.1:${port}`;
  const token = `portal-operator-${port}`;
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), DATA_DIR: dataDir, PUBLIC_URL: url, BILLING_TEST_CLOCK: '1', ADMIN_TOKEN: token, PUBLIC_RATE_LIMIT_PER_MINUTE: '100' };
  delete env.STRIPE_API_URL;
  delete env.LOCAL_STRIPE_PORT;
  fs.mkdirSync('test-results/logs', { recursive: true });
  // The server's log lines go where `npm test` searches them for secrets.
  const log = fs.openSync(path.join('test-results/logs', `playwright-portal-server-${port}.log`), 'w');
  const child: ChildProcess = spawn(process.execPath, ['scripts/start.mjs'], { env, stdio: ['ignore', log, log] });
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`the server exited early (${child.exitCode}); see test-results/logs`);
    try {
      if ((await fetch(`${url}/health`)).ok) break;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    token,
    stop: () =>
      new Promise<void>((resolve) => {
        const done = () => {
          fs.closeSync(log);
          fs.rmSync(dataDir, { recursive: true, force: true });
          resolve();
        };
        if (child.exitCode !== null) return done();
        child.once('exit', done);
        child.kill('SIGTERM');
      }),
  };
}

function client(request: APIRequestContext, base: string, auth: string) {
  return async (method: 'get' | 'post', p: string, data?: unknown) => {
    const res = await request[method](`${base}${p}`, { headers: { Authorization: auth }, data });
    const body = await res.json();
    expect(res.status(), `${method} ${p}: ${JSON.stringify(body)}`).toBe(200);
    return body.data;
  };
}

test('a past-due customer replaces a declined card with a good one in the portal and the plan recovers', async ({ page, request }, info) => {
  test.setTimeout(240_000);
  const server = await startOperatorServer();
  try {
    const operator = client(request, server.url, `Bearer ${server.token}`);
    const company = await operator('post', '/v1/companies', { name: 'Northwind', email: 'owner@northwind.test', processor_key: 'sk_test_portal_e2e', processor_publishable_key: 'pk_test_portal_e2e' });
    const call = client(request, server.url, `Basic ${Buffer.from(`${company.id}:${company.api_key}`).toString('base64')}`);
    const plan = await call('post', `/v1/companies/${company.id}/plans`, { name: 'Studio', charge_amount: 4900, balances: [{ amount: 300, denomination: 'minutes' }] });
    const account = await call('post', `/v1/companies/${company.id}/accounts`, { name: 'Sam Ortiz', email: 'sam@example.com', plan_id: plan.id, token: 'tok_visa' });
    // The card starts declining, then the renewal falls due and fails.
    await call('post', `/v1/accounts/${account.id}/card`, { token: 'tok_chargeDeclined' });
    const clock = await operator('get', '/v1/test_clock');
    await operator('post', '/v1/test_clock/advance', { seconds: Math.ceil((new Date(account.next_plan_renewal).getTime() - new Date(clock.now).getTime()) / 1000) });
    expect((await call('get', `/v1/accounts/${account.id}`)).plan_status).toBe('PAST_DUE');
    const link = await call('post', `/v1/accounts/${account.id}/portal_link`);

    await page.setViewportSize(MOBILE);
    await page.goto(link.url);
    const planCard = section(page, 'Plan');
    await expect(planCard).toContainText('Payment overdue');
    await expect(planCard).toContainText('The last renewal payment did not go through.');
    await expect(page.getByRole('list', { name: 'Charges, newest first' }).getByRole('listitem').first()).toContainText('Failed');
    await shots(page, info, 'past-due');

    await test.step('a declined card is explained in plain words', async () => {
      await fillCard(page, '4000 0000 0000 9995');
      await page.getByRole('button', { name: 'Save new card' }).click();
      const alert = page.getByRole('alert').filter({ hasText: 'declined' });
      await expect(alert).toContainText('the overdue payment with it was declined. The card was declined: it has insufficient funds.');
      await expect(alert).toBeFocused();
      await expect(planCard).toContainText('Payment overdue');
      await shots(page, info, 'declined');
    });

    await test.step('a good card pays the overdue renewal at once', async () => {
      await fillCard(page, '4242 4242 4242 4242');
      await page.getByRole('button', { name: 'Save new card' }).click();
      await expect(page.getByRole('status').filter({ hasText: 'visa card ending in 4242 is saved' })).toContainText('The overdue payment went through: your plan is active again.');
      await expect(planCard).toContainText('Active');
      await expect(planCard).not.toContainText('Payment overdue');
      await expect(page.getByRole('list', { name: 'Charges, newest first' }).getByRole('listitem').first()).toContainText('$49.00Paid');
      await shots(page, info, 'recovered');
      const fresh = await call('get', `/v1/accounts/${account.id}`);
      expect(fresh).toMatchObject({ plan_status: 'ACTIVE', payment_method: { brand: 'visa', last4: '4242' } });
    });

    await test.step('after 24 hours the link has expired', async () => {
      await operator('post', '/v1/test_clock/advance', { seconds: 24 * 3600 });
      await page.reload();
      await expect(page.getByRole('status').filter({ hasText: 'This link has expired. Ask Northwind for a new link.' })).toBeVisible();
      await expect(page.getByRole('button', { name: 'Save new card' })).toHaveCount(0);
    });
  } finally {
    await server.stop();
  }
});
