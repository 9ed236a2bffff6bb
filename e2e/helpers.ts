import fs from 'node:fs';
import path from 'node:path';
import type { APIRequestContext } from '@playwright/test';

export type Demo = { company_id: string; api_key: string; console_email: string; console_password: string };

export function demo(): Demo {
  return JSON.parse(fs.readFileSync(path.join('.test-data/e2e', 'demo.json'), 'utf8')) as Demo;
}

/** A JSON API client with the demo company's Basic credentials. */
export function apiClient(request: APIRequestContext) {
  const d = demo();
  const headers = { Authorization: `Basic ${Buffer.from(`${d.company_id}:${d.api_key}`).toString('base64')}` };
  const call = async (method: 'get' | 'post' | 'put', url: string, data?: unknown) => {
    const res = await request[method](url.replace('{company}', d.company_id), { headers, data });
    return { status: res.status(), body: await res.json() };
  };
  return { demo: d, call };
}
