import { expect, test } from '@playwright/test';
import { section, shot, signIn, uniq } from './console-helpers';

test('the owner invites an admin with a password; the admin signs in and changes it', async ({ page }, info) => {
  const email = `${uniq('ops')}@example.com`;
  await signIn(page);
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Team' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Team' })).toBeVisible();
  const invite = section(page, 'Invite an admin');
  await invite.getByLabel('Their email').fill(email);
  await invite.getByLabel('A password for them').fill('short');
  await invite.getByRole('button', { name: 'Invite admin' }).click();
  await expect(invite.getByText('Must be at least 8 characters.')).toBeVisible();
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
  await expect(page).toHaveURL(/\/console\/sign-in/);
  await signIn(page, email, 'correct horse battery');
  await page.goto('/console/team');
  await expect(section(page, 'Invite an admin')).toContainText('Only the owner of the company can invite admins.');
  const mine = section(page, 'Your password');
  await mine.getByLabel('Current password').fill('wrong one');
  await mine.getByLabel('New password').fill('a new long password');
  await mine.getByRole('button', { name: 'Change password' }).click();
  await expect(mine.getByText('That is not your current password.')).toBeVisible();
  await mine.getByLabel('Current password').fill('correct horse battery');
  await mine.getByRole('button', { name: 'Change password' }).click();
  await expect(mine.getByRole('status')).toHaveText('Your password is changed.');
  await shot(page, info, 'team-admin');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(/\/console\/sign-in/);
  await signIn(page, email, 'a new long password');
});
