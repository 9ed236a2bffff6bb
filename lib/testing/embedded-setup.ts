import type { TestProject } from 'vitest/node';
import { useSetup } from './database-setups';

/** The embedded project's template: one migrated data directory (kept between runs), copied by every test file. */
export default async function setup(project: TestProject) {
  const { value } = await useSetup(project, 'embedded');
  project.provide('embeddedTemplate', value);
}
