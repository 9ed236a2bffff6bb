import { expect, test, type Browser, type Page } from '@playwright/test';
import { alertWith, api, section, shot, signIn, uniq } from './console-helpers';

/** The owner invites an admin through the Team page. */
async function invite(page: Page, email: string, password: string) {
  await page.goto('/console/team');
  const form = section(page, 'Invite an admin');
  await form.getByLabel('Their email').fill(email);
  await form.getByLabel('A password for them').fill(password);
  await form.getByRole('button', { name: 'Invite admin' }).click();
  await expect(form.getByRole('status')).toContainText(`${email} can now sign in`);
}

/** A separate browser (its own cookies), signed in as this admin. */
async function signedInElsewhere(browser: Browser, email: string, password: string) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await signIn(page, email, password);
  return { context, page };
}

const toSignIn = /\/console\/sign-in/;

// Each test signs in several times and sets passwords: every one a scrypt hash at the server's real
// cost (128 MiB, half a second of a core when idle), which on a busy machine takes seconds each.
// The tests share nothing but their worker's company (each invites an admin of its own), so the
// two workers can take them in turn rather than one worker all four.
test.describe.configure({ mode: 'parallel', timeout: 120_000 });

test('the owner invites an admin with a password; the admin signs in and changes it', async ({ page }, info) => {
  const email = `${uniq('ops')}@example.com`;
  await signIn(page);
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Team' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Team' })).toBeVisible();
  const invite = section(page, 'Invite an admin');
  await invite.getByLabel('Their email').fill(email);
  await invite.getByLabel('A password for them').fill('eleven char');
  await invite.getByRole('button', { name: 'Invite admin' }).click();
  await expect(invite.getByText('Must be at least 12 characters.')).toBeVisible();
  await invite.getByLabel('A password for them').fill('correct horse battery');
  await invite.getByRole('button', { name: 'Invite admin' }).click();
  await expect(invite.getByRole('status')).toContainText(`${email} can now sign in`);
  await expect(page.getByRole('region', { name: 'Admins' }).getByRole('row', { name: new RegExp(email) })).toContainText('admin');
  // The same email twice is refused next to the field.
  await invite.getByLabel('Their email').fill(email);
  await invite.getByLabel('A password for them').fill('another password');
  await invite.getByRole('button', { name: 'Invite admin' }).click();
  await expect(invite.getByText('This email is already an admin of your company.')).toBeVisible();
  await shot(page, info, 'team-owner');

  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(toSignIn);
  await signIn(page, email, 'correct horse battery');
  await page.goto('/console/team');
  await expect(section(page, 'Invite an admin')).toContainText('Only the owner of the company can invite admins.');
  await expect(page.getByRole('button', { name: 'Remove' })).toHaveCount(0);
  const mine = section(page, 'Your password');
  await mine.getByLabel('Current password').fill('wrong one');
  await mine.getByLabel('New password').fill('a new long password');
  await mine.getByRole('button', { name: 'Change password' }).click();
  await expect(mine.getByText('That is not your current password.')).toBeVisible();
  await mine.getByLabel('Current password').fill('correct horse battery');
  await mine.getByLabel('New password').fill('too short');
  await mine.getByRole('button', { name: 'Change password' }).click();
  await expect(mine.getByText('Must be at least 12 characters.')).toBeVisible();
  await mine.getByLabel('New password').fill('a new long password');
  await shot(page, info, 'team-admin');
  await mine.getByRole('button', { name: 'Change password' }).click();
  // Every session ends with the old password, this one too.
  await expect(page).toHaveURL(toSignIn);
  await expect(page.getByRole('status')).toHaveText('Your password is changed and your other sessions have ended. Sign in with the new password.');
  await page.goto('/console');
  await expect(page).toHaveURL(toSignIn);
  await signIn(page, email, 'a new long password');
});

test('a password change ends the admin’s sessions in other browsers at once', async ({ page, browser }) => {
  const email = `${uniq('two')}@example.com`;
  await signIn(page);
  await invite(page, email, 'first long password');
  const one = await signedInElsewhere(browser, email, 'first long password');
  const two = await signedInElsewhere(browser, email, 'first long password');
  try {
    await two.page.goto('/console/api-keys');
    await expect(two.page.getByRole('heading', { level: 1, name: 'API keys' })).toBeVisible();

    await one.page.goto('/console/team');
    const mine = section(one.page, 'Your password');
    await mine.getByLabel('Current password').fill('first long password');
    await mine.getByLabel('New password').fill('second long password');
    await mine.getByRole('button', { name: 'Change password' }).click();
    await expect(one.page).toHaveURL(toSignIn);

    await two.page.goto('/console/accounts');
    await expect(two.page).toHaveURL(toSignIn);
    await signIn(two.page, email, 'second long password');
  } finally {
    await one.context.close();
    await two.context.close();
  }
});

test('the owner removes an admin: their open console stops working, actions included, and they cannot sign in', async ({ page, browser, request }, info) => {
  const email = `${uniq('gone')}@example.com`;
  await signIn(page);
  await invite(page, email, 'removable password');
  const them = await signedInElsewhere(browser, email, 'removable password');
  try {
    // They have the API keys page open when they are removed.
    await them.page.goto('/console/api-keys');
    await expect(them.page.getByRole('heading', { level: 1, name: 'API keys' })).toBeVisible();
    const call = api(request);
    const keysBefore = (await call('get', '/v1/companies/{company}/api_keys?limit=100')).body.data.length;

    await page.goto('/console/team');
    const row = page.getByRole('region', { name: 'Admins' }).getByRole('row', { name: new RegExp(email) });
    // The owner is the only owner: not offered for removal.
    await expect(page.getByRole('region', { name: 'Admins' }).getByRole('row', { name: /\(you\)/ }).getByRole('button', { name: 'Remove' })).toHaveCount(0);
    await row.getByRole('button', { name: 'Remove' }).click();
    await row.getByRole('button', { name: `Remove ${email}` }).click();
    await expect(page.getByRole('status').filter({ hasText: 'The admin is removed' })).toBeVisible();
    await expect(page.getByRole('region', { name: 'Admins' }).getByRole('row', { name: new RegExp(email) })).toHaveCount(0);
    await shot(page, info, 'team-removed');

    // Their next action is refused (sent to sign in) and changes nothing.
    await them.page.getByRole('button', { name: 'Issue a new key' }).click();
    await expect(them.page).toHaveURL(toSignIn);
    expect((await call('get', '/v1/companies/{company}/api_keys?limit=100')).body.data.length).toBe(keysBefore);
    await them.page.goto('/console');
    await expect(them.page).toHaveURL(toSignIn);
    await them.page.getByLabel('Email').fill(email);
    await them.page.getByLabel('Password').fill('removable password');
    await them.page.getByRole('button', { name: 'Sign in' }).click();
    await expect(alertWith(them.page, 'do not match')).toBeVisible();
  } finally {
    await them.context.close();
  }
});

test('after 10 failed sign-ins for an email from one address the page says sign-in is paused there, even with the right password', async ({ page, browser }, info) => {
  const email = `${uniq('locked')}@example.com`;
  await signIn(page);
  await invite(page, email, 'the right password');
  // Its own client address, so the per-address count of the other tests is not touched.
  const context = await browser.newContext({ extraHTTPHeaders: { 'x-forwarded-for': '198.51.100.23' } });
  const guesser = await context.newPage();
  try {
    await guesser.goto('/console/sign-in');
    await guesser.getByLabel('Email').fill(email);
    for (let i = 0; i < 10; i++) {
      await guesser.getByLabel('Password').fill(`guess number ${i}`);
      await Promise.all([guesser.waitForResponse((r) => r.url().includes('/api/auth/callback/credentials')), guesser.getByRole('button', { name: 'Sign in' }).click()]);
      await expect(alertWith(guesser, 'do not match')).toBeVisible();
    }
    await guesser.getByLabel('Password').fill('the right password');
    await guesser.getByRole('button', { name: 'Sign in' }).click();
    await expect(alertWith(guesser, 'sign-in is paused for 15 minutes, whatever the password')).toBeVisible();
    await expect(guesser).toHaveURL(toSignIn);
    await shot(guesser, info, 'sign-in-locked');
  } finally {
    await context.close();
  }
});
