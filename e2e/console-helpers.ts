import { expect, type APIRequestContext, type Locator, type Page, type TestInfo } from '@playwright/test';
import { workerCompany, type Demo } from './companies';

/** This worker's company (e2e/companies.ts). */
export function consoleDemo(): Demo {
  return workerCompany();
}

export function api(request: APIRequestContext, creds: { company_id: string; api_key: string } = consoleDemo()) {
  const headers = { Authorization: `Basic ${Buffer.from(`${creds.company_id}:${creds.api_key}`).toString('base64')}` };
  const call = async (method: 'get' | 'post' | 'put' | 'patch' | 'delete', url: string, data?: unknown) => {
    const res = await request[method](url.replace('{company}', creds.company_id), { headers, data });
    return { status: res.status(), body: await res.json() };
  };
  return call;
}

export async function signIn(page: Page, email = consoleDemo().console_email, password = consoleDemo().console_password) {
  await page.goto('/console/sign-in');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('heading', { level: 1, name: 'Dashboard' })).toBeVisible();
}

/** A full-page screenshot kept with the test's results (and looked at). */
export async function shot(page: Page, info: TestInfo, name: string) {
  // Let charts and fonts settle so the picture shows what a person sees.
  await page.waitForLoadState('networkidle');
  await page.screenshot({ path: info.outputPath(`${name}.png`), fullPage: true });
}

export const MOBILE = { width: 390, height: 844 };
export const DESKTOP = { width: 1280, height: 900 };

/**
 * Full-page screenshots at a phone's size and a desktop's, kept with the test's results as
 * `<name>-mobile.png` and `<name>-desktop.png`; the page is left at `endAt`'s size.
 */
export async function shotsAtBothSizes(page: Page, info: TestInfo, name: string, endAt: { width: number; height: number } = DESKTOP) {
  for (const [label, size] of [['mobile', MOBILE], ['desktop', DESKTOP]] as const) {
    await page.setViewportSize(size);
    await page.waitForLoadState('networkidle');
    await page.screenshot({ path: info.outputPath(`${name}-${label}.png`), fullPage: true });
  }
  await page.setViewportSize(endAt);
}

/** Next's route announcer is also role=alert: find ours by its text. */
export function alertWith(page: Page | Locator, text: string | RegExp) {
  return page.getByRole('alert').filter({ hasText: text });
}

/** A section of the page, by its heading. */
export function section(page: Page, name: string) {
  return page.getByRole('region', { name, exact: true });
}

export function uniq(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}${Math.floor(Math.random() * 1000)}`;
}
