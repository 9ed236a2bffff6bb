import { expect, test } from '@playwright/test';
import { alertWith, api, section, shot, signIn, uniq } from './console-helpers';

test('an admin creates a plan and accounts, follows usage, and manages an account', async ({ page, request }, info) => {
  test.setTimeout(180_000);
  const call = api(request);
  const planName = uniq('Starter');
  const freeName = uniq('Free');

  await signIn(page);
  const stat = (label: string) => page.locator('dt', { hasText: new RegExp(`^${label}$`) }).locator('xpath=following-sibling::dd[1]');
  const number = async (label: string) => Number((await stat(label).innerText()).replace(/[$,]/g, ''));
  await expect(stat('Revenue')).toBeVisible();
  const before = { events: await number('Events'), rejected: await number('Rejected events'), revenue: await number('Revenue') };

  await test.step('create a plan in the console, fixing a mistake on the way', async () => {
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Plans' }).click();
    await expect(page.getByRole('heading', { level: 1, name: 'Plans' })).toBeVisible();
    await page.getByRole('link', { name: 'New plan' }).click();
    await page.getByLabel('Name', { exact: true }).fill(planName);
    await page.getByLabel('Price per period (USD)').fill('12.50');
    await page.getByLabel('Denomination').fill('tokens');
    await page.getByLabel('Included units').fill('a thousand');
    await page.getByLabel('Event type').fill('query');
    await page.getByLabel('Units per event').fill('2');
    await page.getByLabel('Taken from balance').fill('tokens');
    await page.getByRole('button', { name: 'Add a billing rule' }).click();
    await page.getByRole('group', { name: 'Rule 2' }).getByLabel('Event type').fill('upload');
    await page.getByRole('group', { name: 'Rule 2' }).getByLabel('Units per event').fill('0.5');
    await page.getByRole('group', { name: 'Rule 2' }).getByLabel('Taken from balance').fill('tokens');
    await page.getByRole('button', { name: 'Add a flag' }).click();
    await page.getByLabel('Flag name').fill('beta');
    await page.getByRole('button', { name: 'Create plan' }).click();
    // The API's schema refuses the amount; the message sits under the field that caused it.
    await expect(page.getByLabel('Included units')).toHaveAttribute('aria-invalid', 'true');
    await expect(page.getByText('Must be a finite number with at most 12 decimals.')).toBeVisible();
    await expect(alertWith(page, 'Please correct the marked field.')).toBeVisible();
    await expect(page.getByLabel('Name', { exact: true })).toHaveValue(planName); // nothing typed was lost
    await shot(page, info, 'plan-new-error');
    await page.getByLabel('Included units').fill('1000');
    await page.getByRole('button', { name: 'Create plan' }).click();
    await expect(page.getByRole('heading', { level: 1, name: planName })).toBeVisible();
    await expect(section(page, 'Billing rules').getByRole('row')).toHaveCount(3);
    await expect(page.getByText('beta: on')).toBeVisible();
    await expect(page.getByText('$12.50 a month')).toBeVisible();
  });
  const planId = page.url().split('/').pop()!;
  const free = await call('post', '/v1/companies/{company}/plans', { name: freeName, balances: [{ amount: 100, denomination: 'tokens' }], billing_rules: [{ type: 'query', amount: 1, denomination: 'tokens' }] });
  expect(free.status).toBe(200);

  const grace = uniq('Grace Hopper');
  await test.step('create an account in the console with a card-collector link', async () => {
    await page.goto('/console/accounts/new');
    await page.getByLabel('Name').fill(grace);
    await page.getByLabel('Email').fill('grace@example.com');
    await page.getByLabel('Plan').selectOption({ label: `${planName} ($12.50 a month)` });
    await page.getByRole('button', { name: 'Create account' }).click();
    // A paid plan needs a card: the domain's refusal is shown in plain words.
    await expect(alertWith(page, 'charges 1250 cents per period')).toBeVisible();
    await page.getByLabel('Create a card-collector link for the customer').check();
    await page.getByRole('button', { name: 'Create account' }).click();
    await expect(page.getByRole('status').filter({ hasText: `Account ${grace} created.` })).toBeVisible();
    await expect(page.getByLabel('Card collector link: send it to the customer')).toHaveValue(/\/collect\/[A-Za-z0-9_-]{40,}$/);
    await shot(page, info, 'account-new');
    await page.getByRole('link', { name: `Open ${grace}` }).click();
    await expect(page.getByRole('heading', { level: 1, name: grace })).toBeVisible();
    await expect(page.getByText('Waiting for card')).toBeVisible();
  });

  const alan = uniq('Alan Turing');
  const created = await call('post', '/v1/companies/{company}/accounts', { name: alan, email: 'alan@example.com', plan_id: planId, token: 'tok_visa' });
  expect(created.status).toBe(200);
  const accountId: string = created.body.data.id;

  await test.step('send events by API', async () => {
    for (let i = 0; i < 5; i++) expect((await call('post', `/v1/accounts/${accountId}/events`, { type: 'query' })).status).toBe(200);
    expect((await call('post', `/v1/accounts/${accountId}/events`, { type: 'query', state: 'pending' })).status).toBe(200);
    expect((await call('post', `/v1/accounts/${accountId}/events`, { type: 'bulk-export', cost_override_amount: 5000, cost_override_denomination: 'tokens', gate_on_balance: true })).status).toBe(402);
    expect((await call('post', `/v1/accounts/${accountId}/events`, { type: 'login' })).status).toBe(200);
  });

  await test.step('find them in the event explorer', async () => {
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Events' }).click();
    await page.getByLabel('Account id').fill(accountId);
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const rows = page.getByRole('region', { name: 'Events matching the filters' }).getByRole('row');
    await expect(rows).toHaveCount(1 + 8);
    await expect(page.getByRole('cell', { name: 'not billed' })).toHaveCount(1);
    await page.getByLabel('State').selectOption('rejected');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect(rows).toHaveCount(1 + 1);
    await expect(rows.nth(1)).toContainText('bulk-export');
    await expect(rows.nth(1)).toContainText('5,000 tokens');
    await shot(page, info, 'events-rejected');
    await page.getByLabel('State').selectOption('');
    await page.getByLabel('Type').fill('query');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect(rows).toHaveCount(1 + 6);
    await expect(page.getByText('pending', { exact: true })).toHaveCount(1);
    await shot(page, info, 'events-by-type');
  });

  await test.step('open the account: plan, balances with pending and available, events, charges', async () => {
    await page.getByRole('link', { name: alan }).first().click();
    await expect(page.getByRole('heading', { level: 1, name: alan })).toBeVisible();
    await expect(page.getByText('VISA ending 4242')).toBeVisible();
    const tokens = section(page, 'Balances').getByRole('row', { name: /tokens/ });
    // 1000 included − 5 × 2 completed; the pending query holds 2 more.
    await expect(tokens.getByRole('cell').nth(1)).toHaveText('990');
    await expect(tokens.getByRole('cell').nth(2)).toHaveText('2');
    await expect(tokens.getByRole('cell').nth(3)).toHaveText('988');
    await expect(section(page, 'Events').getByRole('row')).toHaveCount(1 + 8);
    await expect(section(page, 'Charges').getByRole('row', { name: /\$12\.50/ })).toContainText('succeeded');
    await expect(section(page, 'Ledger').getByRole('row')).toHaveCount(1 + 6); // plan grant + 5 events
  });

  await test.step('grant units, refusing a negative amount first', async () => {
    const grant = section(page, 'Grant units');
    await grant.getByLabel('Denomination').fill('tokens');
    await grant.getByLabel('Units to add').fill('-5');
    await grant.getByRole('button', { name: 'Grant units' }).click();
    await expect(grant.getByText('Must be greater than 0.')).toBeVisible();
    await expect(grant.getByLabel('Units to add')).toBeFocused();
    await grant.getByLabel('Units to add').fill('500');
    await grant.getByLabel('Reason (shown in the ledger)').fill('Goodwill credit');
    await grant.getByRole('button', { name: 'Grant units' }).click();
    await expect(grant.getByRole('status')).toHaveText('Granted 500 tokens. The balance is now 1,490.');
    const tokens = section(page, 'Balances').getByRole('row', { name: /tokens/ });
    await expect(tokens.getByRole('cell').nth(1)).toHaveText('1,490');
    await expect(section(page, 'Ledger').getByRole('row', { name: /Goodwill credit/ })).toContainText('+500');
  });

  await test.step('set a threshold refill', async () => {
    const refill = section(page, 'Set refill');
    await refill.getByLabel('Denomination').fill('tokens');
    await refill.getByLabel('Units per refill').fill('1000');
    await refill.getByLabel('Price per refill (USD)').fill('5');
    await refill.getByRole('button', { name: 'Set refill' }).click();
    await expect(alertWith(refill, 'Please correct the marked field.')).toBeVisible();
    await expect(refill.getByText('Send refill_period: "monthly" for a time-based refill or threshold for a threshold refill.')).toBeVisible();
    await refill.getByLabel('Refill when available drops below (units)').fill('100');
    await refill.getByRole('button', { name: 'Set refill' }).click();
    await expect(refill.getByRole('status')).toContainText('Refill set: 1,000 tokens for $5.00 when available drops below 100.');
    await expect(section(page, 'Balances').getByRole('row', { name: /tokens/ })).toContainText('Below 100: +1,000 for $5.00');
  });

  await test.step('set a daily spend limit, refusing a negative limit first', async () => {
    const limits = section(page, 'Spend limits');
    await expect(limits.getByText('No spend limits.')).toBeVisible();
    const row = limits.getByRole('group', { name: 'New limit' }).first();
    await row.getByLabel('Denomination').fill('tokens');
    await row.getByLabel('Limit (units)').fill('-1');
    await limits.getByRole('button', { name: 'Save spend limits' }).click();
    await expect(row.getByText('Must not be negative.')).toBeVisible();
    await expect(row.getByLabel('Limit (units)')).toHaveAttribute('aria-invalid', 'true');
    await expect(row.getByLabel('Denomination')).toHaveValue('tokens'); // nothing typed was lost
    await row.getByLabel('Limit (units)').fill('50');
    await row.getByLabel('Past it').selectOption('reject');
    await limits.getByRole('button', { name: 'Save spend limits' }).click();
    await expect(limits.getByRole('status')).toHaveText('1 spend limit set.');
    const set = limits.getByRole('row', { name: /tokens/ });
    await expect(set).toContainText('Reject events');
    await expect(set.getByRole('cell').nth(2)).toHaveText('50');
    await expect(limits.getByRole('group', { name: 'Limit 1' }).getByLabel('Limit (units)')).toHaveValue('50');
  });

  await test.step('change to a cheaper plan: scheduled for the renewal', async () => {
    const change = section(page, 'Change plan');
    await change.getByLabel('New plan').selectOption({ label: `${freeName} (free, monthly)` });
    await change.getByRole('button', { name: 'Change plan' }).click();
    // First what the change would do; nothing is changed until the admin confirms.
    await expect(change.getByRole('status')).toContainText('would take over at the next renewal');
    await expect(change.getByRole('status')).toContainText('Nothing is charged now.');
    await expect(section(page, 'Scheduled changes')).not.toContainText(`Moves to plan ${freeName}`);
    await change.getByRole('button', { name: 'Confirm change' }).click();
    await expect(change.getByRole('status')).toContainText('scheduled for the next renewal');
    await expect(section(page, 'Scheduled changes')).toContainText(`Moves to plan ${freeName} at the next renewal`);
  });

  await test.step('create a fresh collector link, shown once', async () => {
    const collector = section(page, 'Card collector link');
    await collector.getByRole('button', { name: 'Create a new link' }).click();
    await expect(collector.getByLabel(`Card collector link for ${alan}`)).toHaveValue(/\/collect\/[A-Za-z0-9_-]{40,}$/);
    await expect(collector).toContainText('Latest link: open until');
    await shot(page, info, 'account');
  });

  await test.step('the full ledger and charges pages', async () => {
    await page.getByRole('link', { name: 'All ledger rows' }).click();
    await expect(page.getByRole('heading', { level: 1, name: `Ledger of ${alan}` })).toBeVisible();
    await expect(page.getByRole('region', { name: 'Ledger' }).getByRole('row')).toHaveCount(1 + 7);
    await shot(page, info, 'account-ledger');
    await page.getByRole('link', { name: `← ${alan}` }).click();
    await page.getByRole('link', { name: 'All charges' }).click();
    await expect(page.getByRole('heading', { level: 1, name: `Charges of ${alan}` })).toBeVisible();
    await expect(page.getByRole('region', { name: 'Charges' }).getByRole('row')).toHaveCount(1 + 1);
    await shot(page, info, 'account-charges');
  });

  await test.step('the plan lists the accounts that use it', async () => {
    await page.goto(`/console/plans/${planId}`);
    const using = section(page, 'Accounts using this plan');
    await expect(using.getByRole('link', { name: alan })).toBeVisible();
    await expect(using.getByRole('link', { name: grace })).toBeVisible();
    await shot(page, info, 'plan');
    await page.goto('/console/plans');
    await expect(page.getByRole('link', { name: planName })).toBeVisible();
    await shot(page, info, 'plans');
  });

  await test.step('search the accounts', async () => {
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Accounts' }).click();
    await page.getByLabel('Search by name, email, external id or account id').fill(alan);
    await page.getByRole('button', { name: 'Search' }).click();
    await expect(page.getByRole('region', { name: `Accounts matching ${alan}` }).getByRole('row')).toHaveCount(1 + 1);
    await page.getByRole('link', { name: 'Clear search' }).click();
    await expect(page.getByRole('link', { name: grace })).toBeVisible();
    await shot(page, info, 'accounts');
  });

  await test.step('ids that are not this company’s show the not-found page', async () => {
    for (const path of ['/console/accounts/a_00000000000000000000000000', '/console/plans/p_nope', '/console/webhooks/w_nope', '/console/accounts/a_nope/ledger']) {
      await page.goto(path);
      await expect(page.getByRole('heading', { level: 1, name: 'Not found' })).toBeVisible();
    }
  });

  await test.step('the dashboard adds it up', async () => {
    await page.goto('/console');
    await expect(page.getByText('Adding up events and charges…')).toHaveCount(0);
    await expect(page.locator('.recharts-surface').first()).toBeVisible();
    await expect(page.getByRole('figure', { name: /Usage per day: tokens/ })).toBeVisible();
    // The account's first period was charged, and its eight events reported (one refused).
    await expect(stat('Revenue')).toHaveText(`$${(before.revenue + 12.5).toFixed(2)}`);
    await expect(stat('Events')).toHaveText(String(before.events + 8));
    await expect(stat('Rejected events')).toHaveText(String(before.rejected + 1));
    await expect(page.getByRole('figure', { name: /Rejected events per day/ })).toBeVisible();
    await page.getByRole('figure', { name: /Rejected events per day/ }).getByText('Show the numbers').click();
    await shot(page, info, 'dashboard');
  });

  await test.step('a narrow screen and the keyboard', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const [path, name] of [
      ['/console', 'dashboard-mobile'],
      [`/console/accounts/${accountId}`, 'account-mobile'],
      ['/console/events', 'events-mobile'],
      ['/console/plans/new', 'plan-new-mobile'],
    ]) {
      await page.goto(path);
      await expect(page.getByRole('heading', { level: 1 })).toBeVisible();
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      expect(width, `${path} fits 390px`).toBeLessThanOrEqual(390);
      await shot(page, info, name);
    }
    await page.goto('/console');
    await page.keyboard.press('Tab');
    await expect(page.getByRole('link', { name: 'Skip to content' })).toBeFocused();
    await page.keyboard.press('Enter');
    await page.keyboard.press('Tab');
    await expect(page.locator('main :focus')).toHaveCount(1);
  });
});
