import { expect, test, type Locator, type Page } from '@playwright/test';
import { api, section, shotsAtBothSizes, signIn, uniq } from './console-helpers';

const rule = (page: Page, n: number) => page.getByRole('group', { name: `Rule ${n}`, exact: true });
const component = (r: Locator, n: number) => r.getByRole('group', { name: `Component ${n}`, exact: true });
const tier = (c: Locator, n: number) => c.getByRole('group', { name: `Tier ${n}`, exact: true });

test('an admin prices LLM calls with a rate card, previews a call, and saves the plan', async ({ page, request }, info) => {
  test.setTimeout(180_000);
  const planName = uniq('LLM');
  await signIn(page);
  await page.goto('/console/plans/new');
  const preview = page.getByRole('status', { name: 'Preview result' });

  await test.step('build the rate card: input tokens in graduated tiers, output tokens per unit, for one model', async () => {
    await page.getByLabel('Name', { exact: true }).fill(planName);
    await page.getByLabel('Denomination').fill('usd');
    await page.getByLabel('Included units').fill('100');
    const r1 = rule(page, 1);
    await r1.getByLabel('Event type').fill('llm');
    await r1.getByLabel('Taken from balance').fill('usd');
    await r1.getByRole('button', { name: 'Add a filter to rule 1' }).click();
    await r1.getByLabel('Property').fill('model');
    await r1.getByLabel('Equals').fill('big');
    await r1.getByRole('button', { name: 'Add a component to rule 1' }).click();
    const c1 = component(r1, 1);
    await c1.getByLabel('Quantity').fill('input_tokens');
    await c1.getByLabel('Priced').selectOption({ label: 'Graduated tiers' });
    await tier(c1, 1).getByLabel('Tier 1: up to').fill('1000');
    await tier(c1, 1).getByLabel('Price per unit').fill('0.001');
    await c1.getByRole('button', { name: 'Add a tier' }).click();
    await tier(c1, 2).getByLabel('Price per unit').fill('0.0005');
    await tier(c1, 2).getByLabel('Flat fee').fill('0.1');
    await r1.getByRole('button', { name: 'Add a component to rule 1' }).click();
    const c2 = component(r1, 2);
    await c2.getByLabel('Quantity').fill('output_tokens');
    await c2.getByLabel('Price per unit').fill('0.002');
    // Any other model: a flat price per call.
    await page.getByRole('button', { name: 'Add a billing rule' }).click();
    await rule(page, 2).getByLabel('Event type').fill('llm');
    await rule(page, 2).getByLabel('Units per event').fill('0.01');
    await rule(page, 2).getByLabel('Taken from balance').fill('usd');
  });

  await test.step('the preview prices a sample call by the rule it matches', async () => {
    await expect(page.getByText('Graduated tiers are priced from zero usage')).toBeVisible();
    await page.getByLabel('Sample quantity input_tokens').fill('1500');
    await page.getByLabel('Sample quantity output_tokens').fill('120');
    await page.getByLabel('Sample property model').fill('mini');
    await expect(preview).toContainText('Rule 2 prices this event.');
    await expect(preview).toContainText('Total0.01 usd');
    await page.getByLabel('Sample property model').fill('big');
    // 1000 × 0.001 + 500 × 0.0005 + 0.1 (the second tier's flat fee) = 1.35; 120 × 0.002 = 0.24.
    await expect(preview).toContainText('Rule 1 prices this event.');
    await expect(preview.getByRole('row', { name: /Component 1: input_tokens/ })).toContainText('1,5001.35');
    await expect(preview.getByRole('row', { name: /Component 2: output_tokens/ })).toContainText('1200.24');
    await expect(preview).toContainText('Total1.59 usd');
  });

  await test.step('tiers out of order: the preview and the server say so on that tier, nothing is saved', async () => {
    const c1 = component(rule(page, 1), 1);
    await c1.getByRole('button', { name: 'Add a tier' }).click();
    await tier(c1, 2).getByLabel('Tier 2: up to').fill('500');
    await tier(c1, 3).getByLabel('Price per unit').fill('0.0001');
    await expect(preview).toContainText("Rule 1, component 1, tier 2, up to: must be greater than the tier before's up_to (1000)");
    await page.getByRole('button', { name: 'Create plan' }).click();
    const upTo = tier(c1, 2).getByLabel('Tier 2: up to');
    await expect(upTo).toHaveAttribute('aria-invalid', 'true');
    await expect(tier(c1, 2).getByText("Must be greater than the tier before's up_to (1000): tiers go in ascending order.")).toBeVisible();
    await expect(page.getByRole('heading', { level: 1, name: 'New plan' })).toBeVisible();
    await expect(page.getByLabel('Name', { exact: true })).toHaveValue(planName);
    await shotsAtBothSizes(page, info, 'rate-card-error');
    await tier(c1, 3).getByRole('button', { name: 'Remove tier 3' }).click();
    await upTo.fill('');
    await expect(preview).toContainText('Total1.59 usd');
    await shotsAtBothSizes(page, info, 'rate-card-preview');
  });

  await test.step('saved, the plan page shows the rate card, and a call costs what the preview showed', async () => {
    await page.getByRole('button', { name: 'Create plan' }).click();
    await expect(page.getByRole('heading', { level: 1, name: planName })).toBeVisible();
    const table = section(page, 'Billing rules');
    await expect(table.getByRole('row')).toHaveCount(3);
    const first = table.getByRole('row').nth(1);
    await expect(first).toContainText('model = big');
    await expect(first).toContainText('input_tokens (graduated, counted this period): up to 1,000 at 0.001; above at 0.0005 + 0.1 usd');
    await expect(first).toContainText('output_tokens × 0.002 usd');
    await expect(table.getByRole('row').nth(2)).toContainText('0.01 usd');
    await shotsAtBothSizes(page, info, 'rate-card-plan');

    const call = api(request);
    const planId = page.url().split('/').pop()!;
    const account = await call('post', '/v1/companies/{company}/accounts', { name: uniq('Ada'), email: 'ada@example.com', plan_id: planId });
    expect(account.status).toBe(200);
    const event = await call('post', `/v1/accounts/${account.body.data.id}/events`, { type: 'llm', quantities: { input_tokens: 1500, output_tokens: 120 }, properties: { model: 'big' } });
    expect(event.status).toBe(200);
    expect(event.body.data).toMatchObject({ cost: { amount: 1.59, denomination: 'usd' }, pricing: { rule: 0, components: [{ amount: 1.35 }, { amount: 0.24 }] } });
  });
});
