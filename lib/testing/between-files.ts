import { afterAll } from 'vitest';
import { leaveProcessAsFound } from './process-state';

// A setup file of the database projects whose files share a worker process (vitest.config.ts):
// after each file, the process as the next file should find it (lib/testing/process-state.ts).
// Registered before the file's own hooks, it runs after them (vitest runs `afterAll` hooks last
// registered first), once the file has closed what it opened.
afterAll(leaveProcessAsFound);
