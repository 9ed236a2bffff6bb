import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const root = path.resolve(__dirname, '../..');
const sdk = path.join(root, 'sdk');
export const tsc = path.join(root, 'node_modules/typescript/bin/tsc');

/**
 * Builds the SDK with its own tsconfig and lays it out as an installed package: a consumer
 * directory with `node_modules/@billing/sdk` holding what package.json's `files` publish, the
 * build output in `dist/`. Answers the consumer directory (a temporary one; remove it after).
 */
export function buildSdkPackage(): { consumer: string; pkg: string } {
  const consumer = fs.mkdtempSync(path.join(os.tmpdir(), 'billing-sdk-'));
  const pkg = path.join(consumer, 'node_modules/@billing/sdk');
  fs.mkdirSync(pkg, { recursive: true });
  execFileSync(process.execPath, [tsc, '-p', path.join(sdk, 'tsconfig.json'), '--outDir', path.join(pkg, 'dist')], { cwd: root, stdio: 'pipe' });
  const manifest = JSON.parse(fs.readFileSync(path.join(sdk, 'package.json'), 'utf8')) as { files: string[] };
  fs.copyFileSync(path.join(sdk, 'package.json'), path.join(pkg, 'package.json'));
  for (const entry of manifest.files) {
    if (entry === 'dist') continue;
    fs.cpSync(path.join(sdk, entry), path.join(pkg, entry), { recursive: true });
  }
  return { consumer, pkg };
}
