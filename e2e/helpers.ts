import type { APIRequestContext } from '@playwright/test';
import { workerCompany, type Demo } from './companies';

export type { Demo };

/** This worker's company (e2e/companies.ts). */
export function demo(): Demo {
  return workerCompany();
}

/** A JSON API client with the Basic credentials of this worker's company. */
export function apiClient(request: APIRequestContext) {
  const d = demo();
  const headers = { Authorization: `Basic ${Buffer.from(`${d.company_id}:${d.api_key}`).toString('base64')}` };
  const call = async (method: 'get' | 'post' | 'put', url: string, data?: unknown) => {
    const res = await request[method](url.replace('{company}', d.company_id), { headers, data });
    return { status: res.status(), body: await res.json() };
  };
  return { demo: d, call };
}
