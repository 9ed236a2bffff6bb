import { expect, test } from '@playwright/test';

test('every page is sent unframeable and unsniffable; without HTTPS in PUBLIC_URL, no HSTS', async ({ page }) => {
  for (const path of ['/', '/console/sign-in', '/docs', '/collect/no-such-link', '/portal/no-such-link']) {
    const res = await page.goto(path);
    expect(res?.status(), path).toBe(200);
    const headers = await res!.allHeaders();
    expect(headers['x-frame-options'], path).toBe('DENY');
    expect(headers['content-security-policy'], path).toBe("frame-ancestors 'none'");
    expect(headers['x-content-type-options'], path).toBe('nosniff');
    expect(headers['strict-transport-security'], path).toBeUndefined();
  }
});

test('a page of the service cannot be framed by another site', async ({ page, baseURL }) => {
  // Another origin (localhost is not 127.0.0.1) tries to show the sign-in page in a frame;
  // setContent returns once the frame has loaded, or failed to.
  await page.goto(`${baseURL!.replace('127.0.0.1', 'localhost')}/v1/openapi.json`);
  await page.setContent(`<iframe src="${baseURL}/console/sign-in"></iframe>`);
  const child = page.frames().find((f) => f !== page.mainFrame());
  expect(child).toBeTruthy();
  expect(await child!.getByRole('button', { name: 'Sign in' }).count()).toBe(0);
  // The page itself shows that button when it is not framed.
  await page.goto('/console/sign-in');
  await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible();
});
