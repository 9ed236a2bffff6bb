import { expect, test, type Page, type TestInfo } from '@playwright/test';
import { api, section, uniq } from './console-helpers';

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

const PACK = { denomination: 'credits', amount_to_deposit: 1000, amount_to_charge: 1000 };

/** An account of the demo company with a card, some usage and a portal link. */
async function customer(call: ReturnType<typeof api>, token: string) {
  expect((await call('patch', '/v1/companies/{company}', { portal_topups: [PACK, { denomination: 'credits', amount_to_deposit: 5500, amount_to_charge: 5000 }] })).status).toBe(200);
  const name = uniq('Self Ada');
  const created = await call('post', '/v1/companies/{company}/accounts', { name, email: 'ada@example.com', token });
  expect(created.status).toBe(200);
  const id: string = created.body.data.id;
  const week = new Date(Date.now() + 7 * 86_400_000).toISOString();
  expect((await call('post', `/v1/accounts/${id}/balance/credits/grants`, { amount: 300, category: 'promotional', expires_at: week, reason: 'Welcome' })).status).toBe(200);
  for (const [type, cost] of [['chat', 2], ['chat', 3], ['render', 25], ['embed', 1]] as const) {
    expect((await call('post', `/v1/accounts/${id}/events`, { type, cost_override_amount: cost, cost_override_denomination: 'credits' })).status).toBe(200);
  }
  expect((await call('put', `/v1/accounts/${id}/balance/credits/auto_refill`, { amount: 500, usd_charge: 500, threshold: 10 })).status).toBe(200);
  const link = await call('post', `/v1/accounts/${id}/portal_link`);
  expect(link.status).toBe(200);
  return { id, name, url: link.body.data.url as string };
}

test('the customer sees usage and grants, buys credit with the card on file, turns the refill off and opens the receipt and its PDF', async ({ page, request }, info) => {
  test.setTimeout(120_000);
  const call = api(request);
  const { id, name, url } = await customer(call, 'tok_visa');
  await page.setViewportSize(MOBILE);
  await page.goto(url);
  await expect(page.getByRole('heading', { level: 1, name })).toBeVisible();

  await test.step('usage: 30 days by type, with the numbers under the chart', async () => {
    const usage = page.getByRole('region', { name: 'Usage' });
    await expect(usage).toContainText('Usage, last 30 days');
    await expect(usage.locator('.recharts-bar-rectangle').first()).toBeVisible();
    await usage.getByText('Show the numbers').click();
    const table = usage.getByRole('region', { name: /per day and type/ });
    await expect(table).toContainText('chat');
    await expect(table).toContainText('5 credits');
    await expect(table).toContainText('render');
    await shots(page, info, 'usage');
  });

  await test.step('grants: the live grant with its expiry', async () => {
    const grants = section(page, 'Credit');
    await expect(grants).toContainText('Promotional');
    await expect(grants).toContainText(/Expires \w+ \d+, \d{4}/);
    await shots(page, info, 'grants');
  });

  await test.step('a top-up: paid with the card on file, said in plain words, the balance raised', async () => {
    const buy = section(page, 'Buy credit');
    await expect(buy).toContainText('VISA ending in 4242');
    await buy.getByRole('button', { name: 'Buy 1,000 credits for $10.00' }).click();
    await expect(buy.getByRole('status')).toHaveText('Paid $10.00 with your card: 1,000 credits added.');
    await expect(page.getByRole('listitem', { name: 'credits balance' })).toContainText('Balance1,269');
    await shots(page, info, 'topup-success');
    const charges = await call('get', `/v1/accounts/${id}/charges`);
    expect(charges.body.data.map((c: { reason: string; amount: number; status: string }) => [c.reason, c.amount, c.status])).toEqual([['deposit', 1000, 'succeeded']]);
  });

  await test.step('the threshold refill the company set: turned off, then on again', async () => {
    const refills = section(page, 'Automatic refills');
    await expect(refills).toContainText('500 credits for $5.00 when below 10');
    await refills.getByRole('button', { name: 'Turn off refill of credits' }).click();
    await expect(refills).toContainText('Automatic refill is off');
    await refills.getByRole('button', { name: 'Turn on refill of credits' }).click();
    await expect(refills).toContainText('Automatic refill is on');
  });

  await test.step('the receipt: a page, and a PDF', async () => {
    const charges = page.getByRole('list', { name: 'Charges, newest first' });
    await charges.getByRole('link', { name: 'Receipt for Top-up of 1000 credits' }).click();
    await expect(page.getByRole('heading', { level: 1, name: 'Receipt' })).toBeVisible();
    const receipt = page.getByRole('article');
    await expect(receipt).toContainText('Demo Company');
    await expect(receipt).toContainText('Top-up of 1000 credits');
    await expect(receipt).toContainText('$10.00 USD');
    await expect(receipt).toContainText('VISA ending in 4242');
    await expect(receipt).toContainText(/ch_[0-9a-z]+/);
    await shots(page, info, 'receipt');
    const href = await page.getByRole('link', { name: 'Download PDF' }).getAttribute('href');
    const pdf = await page.request.get(href!);
    expect(pdf.status()).toBe(200);
    expect(pdf.headers()['content-type']).toBe('application/pdf');
    expect((await pdf.body()).subarray(0, 5).toString()).toBe('%PDF-');
    // Another account's charge through this link: not found.
    const other = await customer(call, 'tok_visa');
    expect((await call('post', `/v1/accounts/${other.id}/deposit`, { denomination: 'credits', amount_to_deposit: 1, amount_to_charge: 100 })).status).toBe(200);
    const [theirs] = (await call('get', `/v1/accounts/${other.id}/charges`)).body.data;
    const miss = await page.goto(`${new URL(url).pathname}/receipts/${theirs.id}`);
    expect(miss?.status()).toBe(404);
  });
});

test('a declined top-up is said in plain words and adds nothing', async ({ page, request }, info) => {
  const call = api(request);
  const { id, url } = await customer(call, 'tok_chargeDeclinedInsufficientFunds');
  await page.setViewportSize(MOBILE);
  await page.goto(url);
  const buy = section(page, 'Buy credit');
  await buy.getByRole('button', { name: 'Buy 5,500 credits for $50.00' }).click();
  await expect(buy.getByRole('alert')).toHaveText('The card was declined: it has insufficient funds.');
  await expect(page.getByRole('listitem', { name: 'credits balance' })).toContainText('Balance269');
  await shots(page, info, 'topup-declined');
  const charges = await call('get', `/v1/accounts/${id}/charges`);
  expect(charges.body.data.map((c: { status: string }) => c.status)).toEqual(['failed']);
});
