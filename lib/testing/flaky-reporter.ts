import fs from 'node:fs';
import path from 'node:path';
import type { Reporter, TestCase } from 'vitest/node';

/**
 * Writes every test that passed only when run again (`--retry`) to the file named by
 * FLAKY_TESTS_FILE, one line each, so that `npm test` can name them at its end: a retry hides no
 * test that fails twice, and hides none that passed only on its second run either.
 */
export default class FlakyReporter implements Reporter {
  private readonly lines: string[] = [];

  onTestCaseResult(test: TestCase): void {
    const d = test.diagnostic();
    if (d?.flaky) this.lines.push(`${path.relative(process.cwd(), test.module.moduleId)} [${test.project.name}] > ${test.fullName} (passed on run ${d.retryCount + 1})`);
  }

  onTestRunEnd(): void {
    const file = process.env.FLAKY_TESTS_FILE;
    if (file) fs.appendFileSync(file, this.lines.map((l) => `${l}\n`).join(''));
  }
}
