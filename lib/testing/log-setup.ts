import path from 'node:path';
import pino from 'pino';
import { logTo } from '../log';

// The service's log lines during tests go to a file per process (test-results/logs), at debug:
// the test output stays readable, and `npm test` scans every line for secrets afterwards.
const dir = path.resolve(__dirname, '../../test-results/logs');
logTo(pino.destination({ dest: path.join(dir, `vitest-${process.env.TEST_DB ?? 'unit'}-${process.pid}.log`), mkdir: true, append: true, sync: true }), 'debug');
