import fs from 'node:fs';
import type { TestProject } from 'vitest/node';
import { makeEmbeddedTemplate } from './templates';

/** The embedded project's template: one migrated data directory, copied by every test file. */
export default async function setup(project: TestProject) {
  const dir = await makeEmbeddedTemplate();
  project.provide('embeddedTemplate', dir);
  return () => fs.rmSync(dir, { recursive: true, force: true });
}
