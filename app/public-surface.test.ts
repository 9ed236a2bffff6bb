import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAppServer, type AppServer } from '../lib/testing/servers';
import { migratedDataDir } from '../lib/testing/templates';

// Against a started server (`next start`): headers come from next.config and proxy.ts, which
// only Next.js itself applies. Not about the database: runs once, with the embedded one.
describe('a started server', () => {
  let server: AppServer;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await migratedDataDir('headers-');
    // Served over HTTPS by a proxy in front; the test talks to the server directly.
    server = await startAppServer({ DATA_DIR: dataDir, PUBLIC_URL: 'https://billing.example.test', ADMIN_TOKEN: '', APP_SECRET: '', STRIPE_API_URL: '' });
  });
  afterAll(async () => {
    await server?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('sends every HTML page unframeable, unsniffable and HTTPS-only', async () => {
    for (const page of ['/', '/console/sign-in', '/console', '/docs', '/collect/no-such-link', '/portal/no-such-link']) {
      const res = await fetch(`${server.url}${page}`);
      expect(res.status, page).toBe(200);
      expect(res.headers.get('content-type'), page).toMatch(/^text\/html/);
      expect(res.headers.get('x-frame-options'), page).toBe('DENY');
      expect(res.headers.get('content-security-policy'), page).toBe("frame-ancestors 'none'");
      expect(res.headers.get('x-content-type-options'), page).toBe('nosniff');
      expect(res.headers.get('strict-transport-security'), page).toBe('max-age=31536000');
      // The hosted pages carry their token in the path: nothing of it may leave in a Referer.
      const hosted = /^\/(collect|portal)\//.test(page);
      expect(res.headers.get('referrer-policy'), page).toBe(hosted ? 'no-referrer' : null);
      if (hosted) expect(await res.text(), page).toContain('<meta name="referrer" content="no-referrer"/>');
    }
    const api = await fetch(`${server.url}/v1/openapi.json`);
    expect(api.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('answers 400 to a console address its pages could not read, before anything else', async () => {
    for (const address of ['/console/accounts/%00', '/console/accounts?q=%00', '/console/events?account_id=a&account_id=b']) {
      const res = await fetch(`${server.url}${address}`, { redirect: 'manual' });
      expect(res.status, address).toBe(400);
      expect(await res.text(), address).toMatch(/^This address is not valid: /);
      expect(res.headers.get('strict-transport-security'), address).toBe('max-age=31536000');
    }
    // A readable one goes on as before: to the sign-in page, without a session.
    const fine = await fetch(`${server.url}/console/accounts?q=ada`, { redirect: 'manual' });
    expect(fine.status).toBe(307);
  });

  it('refuses sign-in bodies over 64 KiB before next-auth reads them, and signs in with a small one', async () => {
    const url = `${server.url}/api/auth/callback/credentials`;
    const declared = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `email=a%40b.io&password=${'x'.repeat(8 * 1024 * 1024)}` });
    expect(declared.status).toBe(413);
    expect((await declared.json()).error).toMatchObject({ type: 'payload_too_large', message: 'Request bodies are limited to 64 KiB.' });

    // Chunked, without a length, sent slowly: the answer comes long before 8 MiB have gone out.
    const chunked = await new Promise<{ status: number; sent: number }>((resolve, reject) => {
      let sent = 0;
      let answered = false;
      const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'transfer-encoding': 'chunked' } }, (res) => {
        answered = true;
        res.resume();
        resolve({ status: res.statusCode!, sent });
        req.destroy();
      });
      req.on('error', (err) => (answered ? undefined : reject(err)));
      const chunk = Buffer.alloc(16 * 1024, 'x');
      const pump = () => {
        if (answered) return;
        if (sent >= 8 * 1024 * 1024) return void req.end();
        sent += chunk.length;
        req.write(chunk);
        setTimeout(pump, 5);
      };
      pump();
    });
    expect(chunked.status).toBe(413);
    expect(chunked.sent).toBeLessThan(2 * 1024 * 1024);

    const demo = JSON.parse(fs.readFileSync(path.join(dataDir, 'demo.json'), 'utf8'));
    const csrf = await fetch(`${server.url}/api/auth/csrf`);
    const cookie = csrf.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const { csrfToken } = await csrf.json();
    const signIn = await fetch(url, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      body: new URLSearchParams({ csrfToken, email: demo.console_email, password: demo.console_password, json: 'true' }).toString(),
    });
    expect(signIn.status, await signIn.clone().text()).toBe(200);
    expect((await signIn.json()).url).not.toContain('error');
    expect(signIn.headers.getSetCookie().some((c) => /session-token=/.test(c))).toBe(true);
  });

  it('reads no server action body over 64 KiB, on the hosted pages or anywhere', async () => {
    // A real action id of the build (the console's, whose ids reach its pages' bundles).
    const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '../.next/server/server-reference-manifest.json'), 'utf8')) as { node: Record<string, { filename: string }> };
    const [actionId] = Object.entries(manifest.node).find(([, a]) => a.filename.startsWith('app/console/'))!;
    const refusals = () => server.output().split('Body exceeded 64kb limit').length - 1;
    for (const page of ['/collect/no-such-link', '/portal/no-such-link', '/console/sign-in']) {
      // A fetch action's failure is answered inside its 200 (the page's own script reads it); the server's log says why.
      const post = async (size: number) => {
        const res = await fetch(`${server.url}${page}`, { method: 'POST', headers: { 'next-action': actionId, 'content-type': 'text/plain;charset=UTF-8' }, body: `["${'x'.repeat(size)}"]` });
        await res.arrayBuffer();
        await new Promise((r) => setTimeout(r, 100));
        return refusals();
      };
      const before = refusals();
      expect(await post(100 * 1024), page).toBe(before + 1);
      // A small one is read (and refused by the action itself, without a session).
      expect(await post(1024), page).toBe(before + 1);
    }
  });
});
