import fs from 'node:fs';
import path from 'node:path';

export type Demo = { company_id: string; api_key: string; console_email: string; console_password: string };

/** The operator token of the server the browser tests start (playwright.config.ts): it registers the workers' companies. */
export const e2eAdminToken = 'e2e-operator-token-of-this-run';

/** The server's DATA_DIR (E2E_DATA_DIR lets a dev server with its own directory be used). */
const dataDir = () => process.env.E2E_DATA_DIR ?? '.test-data/e2e';

/** Where the company of parallel worker `i` is kept (e2e/global-setup.ts writes it). */
export const companyFile = (i: number) => path.join(dataDir(), `company-${i}.json`);

/** The company of this worker's tests (TEST_PARALLEL_INDEX: 0 up to the number of workers). */
export function workerCompany(): Demo {
  return JSON.parse(fs.readFileSync(companyFile(Number(process.env.TEST_PARALLEL_INDEX ?? 0)), 'utf8')) as Demo;
}
