import { expect, test, type Page } from '@playwright/test';
import { alertWith, section, shot, signIn, uniq } from './console-helpers';

/** The owner invites an admin through the Team page. */
async function invite(page: Page, email: string, password: string) {
  await page.goto('/console/team');
  const form = section(page, 'Invite an admin');
  await form.getByLabel('Their email').fill(email);
  await form.getByLabel('A password for them').fill(password);
  await form.getByRole('button', { name: 'Invite admin' }).click();
  await expect(form.getByRole('status')).toContainText(`${email} can now sign in`);
}

const toSignIn = /\/console\/sign-in/;

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
  await expect(invite.getByText('An admin with this email already exists.')).toBeVisible();
  await shot(page, info, 'team-owner');

  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(toSignIn);
  await signIn(page, email, 'correct horse battery');
  await page.goto('/console/team');
  await expect(section(page, 'Invite an admin')).toContainText('Only the owner of the company can invite admins.');
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
  await mine.getByRole('button', { name: 'Change password' }).click();
  await expect(mine.getByRole('status')).toHaveText('Your password is changed.');
  await shot(page, info, 'team-admin');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(toSignIn);
  await signIn(page, email, 'a new long password');
});

test('after 10 failed sign-ins for an email the page says sign-in is paused, even with the right password', async ({ page, browser }, info) => {
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
