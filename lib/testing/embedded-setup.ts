import type { TestProject } from 'vitest/node';
import { embeddedTemplate } from './templates';

/** The embedded project's template: one migrated data directory (kept between runs), copied by every test file. */
export default async function setup(project: TestProject) {
  project.provide('embeddedTemplate', await embeddedTemplate());
}
