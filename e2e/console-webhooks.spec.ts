import { expect, test } from '@playwright/test';
import { startReceiver } from '../lib/testing/webhook-receiver';
import { api, section, shot, signIn, uniq } from './console-helpers';

test('an admin creates a webhook, subscribes it, sees a delivery with its attempts and re-sends it', async ({ page, request }, info) => {
  test.setTimeout(120_000);
  const receiver = await startReceiver();
  const call = api(request);
  try {
    const name = uniq('Webhook Watcher');
    const account = await call('post', '/v1/companies/{company}/accounts', { name, email: 'watch@example.com' });
    expect(account.status).toBe(200);
    const accountId: string = account.body.data.id;
    expect((await call('post', `/v1/accounts/${accountId}/balance/tokens`, { amount: 5 })).status).toBe(200);

    await signIn(page);
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Webhooks' }).click();
    await expect(page.getByRole('heading', { level: 1, name: 'Webhooks' })).toBeVisible();
    const form = section(page, 'New webhook');
    await form.getByLabel('URL').fill('ftp://example.com/hook');
    await form.getByRole('button', { name: 'Create webhook' }).click();
    await expect(form.getByText('Must use http or https.')).toBeVisible();
    await form.getByLabel('URL').fill(receiver.url);
    await form.getByLabel('negative_balance').check();
    await form.getByRole('button', { name: 'Create webhook' }).click();
    await expect(form.getByRole('status')).toHaveText('Webhook created, subscribed to negative_balance.');
    await expect(form.getByLabel('Signing secret (verify the webhook-signature header with it)')).toHaveValue(/^whsec_/);
    await expect(section(page, 'Your webhooks').getByRole('row', { name: new RegExp(receiver.url) })).toContainText('negative_balance');
    await shot(page, info, 'webhooks');
    await form.getByRole('link', { name: 'Open the webhook' }).click();
    await expect(page.getByRole('heading', { level: 1, name: 'Webhook' })).toBeVisible();
    await expect(section(page, 'Deliveries')).toContainText('Nothing sent yet.');

    // An event the balance cannot cover takes it below zero: one negative_balance delivery.
    const event = await call('post', `/v1/accounts/${accountId}/events`, { type: 'render', cost_override_amount: 8, cost_override_denomination: 'tokens' });
    expect(event.status).toBe(200);
    expect(event.body.data.balance.amount).toBe(-3);
    await receiver.waitFor(1, 30_000);
    expect(receiver.requests[0].json).toMatchObject({ topic: 'negative_balance', account_id: accountId, denomination: 'tokens', balance: '-3' });

    await expect(async () => {
      await page.reload();
      await expect(section(page, 'Deliveries').getByRole('listitem')).toHaveCount(1, { timeout: 1000 });
    }).toPass({ timeout: 30_000 });
    const delivery = section(page, 'Deliveries').getByRole('listitem').first();
    await expect(delivery).toContainText(`negative_balance for ${name} (tokens)`);
    await expect(delivery).toContainText('1 attempt');
    await expect(delivery.getByText('succeeded', { exact: true })).toBeVisible();
    await expect(delivery.getByRole('region', { name: /Attempts of delivery/ }).getByRole('row')).toHaveCount(1 + 1);
    await delivery.getByText('Payload').click();
    await expect(delivery.locator('pre')).toContainText('"balance": "-3"');

    await delivery.getByRole('button', { name: 'Re-send' }).click();
    await expect(delivery.getByRole('status')).toHaveText('Re-sent: the receiver answered 200.');
    await expect(delivery).toContainText('2 attempts');
    await expect(delivery.getByRole('region', { name: /Attempts of delivery/ }).getByRole('row')).toHaveCount(1 + 2);
    expect(receiver.requests).toHaveLength(2);
    expect(receiver.requests[1].headers['webhook-id']).toBe(receiver.requests[0].headers['webhook-id']);
    await shot(page, info, 'webhook-deliveries');

    // Topics can be changed later.
    const topics = section(page, 'Topics');
    await topics.getByLabel('balance_change').check();
    await topics.getByRole('button', { name: 'Save topics' }).click();
    await expect(topics.getByRole('status')).toHaveText('Subscribed to negative_balance, balance_change.');
    await page.reload();
    await expect(section(page, 'Topics').getByLabel('balance_change')).toBeChecked();
    await page.setViewportSize({ width: 390, height: 844 });
    await shot(page, info, 'webhook-mobile');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  } finally {
    await receiver.close();
  }
});
