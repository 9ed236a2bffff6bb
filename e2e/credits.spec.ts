import { expect, test, type Page, type TestInfo } from '@playwright/test';
import { api, section, signIn, uniq } from './console-helpers';

// Screenshots: test-results/e2e/<test>/credits-*-{mobile,desktop}.png (Playwright's output directory).
const MOBILE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 900 };

async function shots(page: Page, info: TestInfo, name: string) {
  for (const [label, size] of [['mobile', MOBILE], ['desktop', DESKTOP]] as const) {
    await page.setViewportSize(size);
    await page.waitForLoadState('networkidle');
    await page.screenshot({ path: info.outputPath(`credits-${name}-${label}.png`), fullPage: true });
  }
  await page.setViewportSize(DESKTOP);
}

const day = (iso: string) => new Date(iso).toLocaleDateString('en-US', { year: 'numeric', month: 'long', day: 'numeric', timeZone: 'UTC' });

test('an admin sees an account\'s grants, voids one and reads the Credits page; the customer sees the live grants with their expiry', async ({ page, request }, info) => {
  test.setTimeout(120_000);
  const call = api(request);
  const created = await call('post', '/v1/companies/{company}/accounts', { name: uniq('Grants Ada'), email: 'ada@example.com', token: 'tok_visa' });
  expect(created.status).toBe(200);
  const id: string = created.body.data.id;
  // Times from the server's clock (the test clock may be ahead of this machine's).
  const expiresAt = new Date(new Date(created.body.data.created_at).getTime() + 10 * 86_400_000).toISOString();
  const promo = await call('post', `/v1/accounts/${id}/balance/credits/grants`, { amount: 75, priority: 10, expires_at: expiresAt, reason: 'Launch offer' });
  expect(promo.status).toBe(200);
  const gift = await call('post', `/v1/accounts/${id}/balance/credits/grants`, { amount: 20, reason: 'Apology' });
  expect(gift.status).toBe(200);
  expect((await call('post', `/v1/accounts/${id}/deposit`, { denomination: 'credits', amount_to_deposit: 300, amount_to_charge: 1500 })).status).toBe(200);
  expect((await call('post', `/v1/accounts/${id}/events`, { type: 'query', cost_override_amount: 25, cost_override_denomination: 'credits' })).status).toBe(200);

  await test.step('the account page lists the grants: category, amount, remaining, priority, expiry, status', async () => {
    await signIn(page);
    await page.setViewportSize(DESKTOP);
    await page.goto(`/console/accounts/${id}`);
    const grants = section(page, 'Credit grants');
    const rows = grants.getByRole('row');
    // A header row and three grants.
    await expect(rows).toHaveCount(4);
    const promoRow = rows.filter({ hasText: 'promotional' }).filter({ hasText: '75' });
    // The promotional grant (priority 10) was drawn first: 75 − 25 = 50 left.
    await expect(promoRow).toContainText('50');
    await expect(promoRow).toContainText('10');
    await expect(promoRow).toContainText(expiresAt.slice(0, 10));
    await expect(promoRow).toContainText('live');
    const paidRow = rows.filter({ hasText: 'paid' });
    await expect(paidRow).toContainText('300');
    await expect(paidRow).toContainText('Never');
    await shots(page, info, 'account-grants');
  });

  await test.step('voiding asks first, then takes what is left through the same call as the API', async () => {
    const grants = section(page, 'Credit grants');
    const giftRow = grants.getByRole('row').filter({ hasText: 'promotional' }).filter({ hasText: '20' }).filter({ hasText: 'Never' });
    await giftRow.getByRole('button', { name: 'Void' }).click();
    await giftRow.getByRole('button', { name: 'Void 20 credits' }).click();
    await expect(grants.getByRole('row').filter({ hasText: 'voided' })).toHaveCount(1);
    const voided = await call('get', `/v1/accounts/${id}/balance/credits/grants?status=voided`);
    expect(voided.body.data.map((g: { id: string; remaining: number }) => [g.id, g.remaining])).toEqual([[gift.body.data.id, 0]]);
    expect((await call('get', `/v1/accounts/${id}/balance/credits`)).body.data.amount).toBe(350);
    const ledger = await call('get', `/v1/accounts/${id}/transactions`);
    expect(ledger.body.data[0]).toMatchObject({ type: 'void', amount: -20, grant_id: gift.body.data.id });
    await shots(page, info, 'account-voided');
  });

  await test.step('the Credits page shows the report and a chart per day', async () => {
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Credits' }).click();
    await expect(page.getByRole('heading', { level: 1, name: 'Credits' })).toBeVisible();
    const report = await call('get', '/v1/companies/{company}/reports/credits');
    const credits = report.body.data.denominations.find((d: { denomination: string }) => d.denomination === 'credits');
    const row = page.getByRole('table', { name: 'Credits per denomination' }).getByRole('row').filter({ hasText: 'credits' });
    await expect(row).toContainText(`${credits.granted.paid.toLocaleString('en-US')} paid`);
    await expect(row).toContainText(`${credits.voided.promotional.toLocaleString('en-US')} promotional`);
    const chart = page.getByRole('figure').filter({ hasText: 'Credits per day: credits' });
    await expect(chart.locator('svg.recharts-surface').first()).toBeVisible();
    await chart.getByText('Show the numbers').click();
    const today = chart.getByRole('region', { name: 'Credits per day: credits, per day' }).getByRole('row').nth(1);
    await expect(today).toContainText(created.body.data.created_at.slice(0, 10));
    await shots(page, info, 'report');
  });

  await test.step('the customer\'s portal shows the live grants with their expiry', async () => {
    const link = await call('post', `/v1/accounts/${id}/portal_link`);
    expect(link.status).toBe(200);
    await page.context().clearCookies();
    await page.setViewportSize(MOBILE);
    await page.goto(link.body.data.url);
    const list = page.getByRole('list', { name: 'Credit grants, soonest expiry first' }).getByRole('listitem');
    await expect(list).toHaveCount(2);
    await expect(list.nth(0)).toContainText('50 credits');
    await expect(list.nth(0)).toContainText('Promotional');
    await expect(list.nth(0)).toContainText(`Expires ${day(expiresAt)}`);
    await expect(list.nth(1)).toContainText('300 credits');
    await expect(list.nth(1)).toContainText('Purchased');
    await expect(list.nth(1)).toContainText('Never expires');
    await shots(page, info, 'portal');
  });
});
