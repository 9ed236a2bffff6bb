import path from 'node:path';
import pino from 'pino';
import { logTo } from '../log';

// The service's log lines during tests go to a file per process (test-results/logs), at debug:
// the test output stays readable, and `npm test` scans every line for secrets afterwards. Run
// before every test file (a worker that stays runs it again for each, lines a file's capture
// left pointed elsewhere come back here); the file is opened once per process.
const dir = path.resolve(__dirname, '../../test-results/logs');
const opened = globalThis as { __testLogFile?: pino.DestinationStream };
opened.__testLogFile ??= pino.destination({ dest: path.join(dir, `vitest-${process.env.TEST_DB ?? 'unit'}-${process.pid}.log`), mkdir: true, append: true, sync: true });
logTo(opened.__testLogFile, 'debug');
