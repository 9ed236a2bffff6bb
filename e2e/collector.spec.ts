import { expect, test } from '@playwright/test';
import { apiClient } from './helpers';

test('an end customer saves a card on the hosted collector and the pending plan starts', async ({ page, request }, info) => {
  const api = apiClient(request);
  const plan = await api.call('post', '/v1/companies/{company}/plans', {
    name: 'Starter',
    charge_amount: 1500,
    billing_period: 'month',
    balances: [{ amount: 1000, denomination: 'tokens' }],
  });
  expect(plan.status).toBe(200);
  const created = await api.call('post', '/v1/companies/{company}/accounts', { name: 'Lin Chen', email: 'lin@example.com', plan_id: plan.body.data.id, enable_card_collector: 1 });
  expect(created.status).toBe(200);
  expect(created.body.data.plan_status).toBe('PENDING_PAYMENT_METHOD');
  const url: string = created.body.data.card_collector_url;
  expect(url).toMatch(/\/collect\/[A-Za-z0-9_-]{40,}$/);

  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(url);
  await expect(page.getByText('Demo Company')).toBeVisible();
  await expect(page.getByRole('heading', { name: 'Add a payment card' })).toBeVisible();
  await expect(page.getByText('charges $15.00 now')).toBeVisible();
  await page.getByLabel('Card number').fill('4242 4242 4242 4242');
  await page.getByLabel('Expiration date').fill('12 / 34');
  await page.getByLabel('CVC').fill('123');
  await page.screenshot({ path: info.outputPath('collector-filled-mobile.png'), fullPage: true });
  await page.getByRole('button', { name: 'Save card' }).click();
  await expect(page.getByRole('status')).toContainText('visa card ending in 4242 is saved');
  await page.screenshot({ path: info.outputPath('collector-saved-mobile.png'), fullPage: true });

  const account = await api.call('get', `/v1/accounts/${created.body.data.id}`);
  expect(account.body.data.plan_status).toBe('ACTIVE');
  expect(account.body.data.payment_method).toMatchObject({ brand: 'visa', last4: '4242' });
  const balance = await api.call('get', `/v1/accounts/${created.body.data.id}/balance/tokens`);
  expect(balance.body.data.amount).toBe(1000);
  const charges = await api.call('get', `/v1/accounts/${created.body.data.id}/charges`);
  expect(charges.body.data.map((c: { amount: number; status: string }) => [c.amount, c.status])).toEqual([[1500, 'succeeded']]);

  // The link works once.
  await page.goto(url);
  await expect(page.getByText('already used')).toBeVisible();
});

test('a declined card is explained in plain words and the link stays usable', async ({ page, request }, info) => {
  const api = apiClient(request);
  const plan = await api.call('post', '/v1/companies/{company}/plans', { name: 'Pro', charge_amount: 4900, balances: [{ amount: 50, denomination: 'seats' }] });
  const created = await api.call('post', '/v1/companies/{company}/accounts', { name: 'Sam Ortiz', email: 'sam@example.com', plan_id: plan.body.data.id, enable_card_collector: true });
  await page.goto(created.body.data.card_collector_url);
  await page.getByLabel('Card number').fill('4000 0000 0000 0002');
  await page.getByLabel('Expiration date').fill('12 / 34');
  await page.getByLabel('CVC').fill('123');
  await page.getByRole('button', { name: 'Save card' }).click();
  await expect(page.getByRole('alert').filter({ hasText: 'declined' })).toBeVisible();
  await page.screenshot({ path: info.outputPath('collector-declined.png'), fullPage: true });
  expect((await api.call('get', `/v1/accounts/${created.body.data.id}`)).body.data.plan_status).toBe('PENDING_PAYMENT_METHOD');

  await page.getByLabel('Card number').fill('5555 5555 5555 4444');
  await page.getByRole('button', { name: 'Save card' }).click();
  await expect(page.getByRole('status')).toContainText('mastercard card ending in 4444 is saved');
  expect((await api.call('get', `/v1/accounts/${created.body.data.id}`)).body.data.plan_status).toBe('ACTIVE');
});

test('a link spent by failed card attempts says so in plain words, and a new link works', async ({ page, request }, info) => {
  const api = apiClient(request);
  const plan = await api.call('post', '/v1/companies/{company}/plans', { name: 'Team', charge_amount: 3000, balances: [{ amount: 10, denomination: 'seats' }] });
  const created = await api.call('post', '/v1/companies/{company}/accounts', { name: 'Kim Lee', email: 'kim@example.com', plan_id: plan.body.data.id, enable_card_collector: true });
  const url: string = created.body.data.card_collector_url;
  for (let i = 0; i < 4; i++) {
    const r = await request.post(`${new URL(url).pathname}/submit`, { data: { token: 'tok_chargeDeclined' } });
    expect(r.status()).toBe(402);
  }
  await page.goto(url);
  await page.getByLabel('Card number').fill('4000 0000 0000 0002');
  await page.getByLabel('Expiration date').fill('12 / 34');
  await page.getByLabel('CVC').fill('123');
  await page.getByRole('button', { name: 'Save card' }).click();
  await expect(page.getByRole('alert').filter({ hasText: 'can no longer be used' })).toBeVisible();
  await expect(page.getByRole('button', { name: 'Save card' })).toHaveCount(0);
  await page.screenshot({ path: info.outputPath('collector-spent.png'), fullPage: true });

  await page.reload();
  await expect(page.getByRole('status')).toContainText('too many card attempts through it failed. Ask Demo Company for a new link.');
  expect((await request.post(`${new URL(url).pathname}/submit`, { data: { token: 'tok_visa' } })).status()).toBe(410);

  const fresh = await api.call('post', `/v1/accounts/${created.body.data.id}/card_collector`);
  await page.goto(fresh.body.data.card_collector_url);
  await page.getByLabel('Card number').fill('4242 4242 4242 4242');
  await page.getByLabel('Expiration date').fill('12 / 34');
  await page.getByLabel('CVC').fill('123');
  await page.getByRole('button', { name: 'Save card' }).click();
  await expect(page.getByRole('status')).toContainText('visa card ending in 4242 is saved');
  expect((await api.call('get', `/v1/accounts/${created.body.data.id}`)).body.data.plan_status).toBe('ACTIVE');
});
