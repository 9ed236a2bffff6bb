import { idempotencyTiming } from '../api/idempotency';
import { forgetCachedKeysForTests } from '../api/credentials';
import { companySlotsHeld, resetRateLimitsForTests } from '../api/rate-limit';
import { checkPaths } from '../billing/events/check';
import { groupCommits } from '../billing/events/group';
import { singleStatement } from '../billing/events/single';
import { resetSendsForTests } from '../billing/webhooks/send';
import { resetSenderForTests, senderLeftRunning } from '../billing/webhooks/sender';
import { resetClockForTests } from '../clock';
import { clearDashboardCache } from '../console/dashboard';
import { forgetAuthOptionsForTests } from '../console/next-auth';
import { hashesUnderWay, resetHashingForTests } from '../crypto';
import { forgetDatabaseForTests } from '../db/client';
import { embeddedThreadsRunning } from '../db/pglite-thread';
import { forgetHostProblemsForTests } from '../db/hosts';
import { forgetReplicaForTests } from '../db/replica';
import { resetWorkerForTests, workerLeftRunning } from '../jobs/worker';
import { resetMetricsForTests } from '../metrics/registry';
import { resetProcessorsForTests } from '../processor/processors';
import { forgetStripeClientsForTests } from '../processor/stripe';
import { resetLifecycleForTests } from '../probes';
import { shutdownStarted } from '../shutdown';

/**
 * The database projects' files run one after another in worker processes that stay
 * (`isolate: false`, vitest.config.ts). A worker evaluates each module once, so what a module
 * keeps (in itself or on globalThis, where the service keeps what its route handlers and worker
 * share) outlives the file that changed it. After every file, `leaveProcessAsFound` (registered
 * by lib/testing/between-files.ts, a setup file) puts back each piece listed here, so the next
 * file finds the process as a new one has it. A file's own database handle, its local Stripe
 * server and receivers are closed by the file itself (`useTestDatabase`, `useLocalStripe`); the
 * logger and the password cost are set again before every file by the other setup files
 * (log-setup.ts, password-cost.ts); vitest itself restores `vi.spyOn` spies. A piece of state
 * added to lib/ that a test file can change belongs in this list.
 *
 * What a file must not leave behind (the worker loop or the webhook sender still running, sends,
 * requests or password hashes under way, a stop begun, handles still open: a database pool or
 * thread, a server, a timer, a child process) fails the file, and is put back or closed as far as
 * it can be, rather than reaching the next file quietly.
 */
type Piece = { what: string; reset: () => string | null | undefined | void | Promise<string | null | undefined | void> };

// The process's own environment and the tests' mutable values, as the worker's first file found them.
const startEnv = { ...process.env };
const startValues: [Record<string, number>, Record<string, number>][] = [singleStatement, checkPaths, groupCommits, idempotencyTiming].map((o) => [o, { ...o }]);

export const PROCESS_STATE: Piece[] = [
  // Files set BILLING_TEST_CLOCK, ADMIN_TOKEN, STRIPE_TIMEOUT_MS and others at their top, and
  // useLocalStripe STRIPE_API_URL: the settings (lib/env.ts) read process.env at each call.
  { what: 'process.env', reset: restoreEnv },
  // The test clock moves only forward, and a file may replace the wall clock.
  { what: 'the clock', reset: resetClockForTests },
  {
    what: 'the worker: its loop, tasks and job handlers',
    reset: () => {
      const left = workerLeftRunning();
      resetWorkerForTests();
      return left;
    },
  },
  {
    what: 'the webhook sender: its background run, send slots, slow and paused webhooks',
    reset: () => {
      const left = senderLeftRunning();
      resetSenderForTests();
      return left;
    },
  },
  { what: "webhook sends: name resolution and the agents' kept sockets", reset: resetSendsForTests },
  // setDatabase: the next file's harness installs its own; a replica's pool is closed with it.
  {
    what: 'the process-wide database, the read replica, the hosts found down',
    reset: async () => {
      const left = await forgetDatabaseForTests();
      forgetReplicaForTests();
      forgetHostProblemsForTests();
      // An embedded database's thread does not keep the process alive: the handles below miss it.
      const threads = embeddedThreadsRunning();
      return [left, threads ? `${threads} embedded database(s) still open (their threads running)` : null].filter(Boolean).join('; ') || null;
    },
  },
  {
    what: 'the payment processor: a replaced adapter, SDK clients bound to a gone local Stripe server',
    reset: () => {
      resetProcessorsForTests();
      forgetStripeClientsForTests();
    },
  },
  { what: 'the API key cache', reset: forgetCachedKeysForTests },
  {
    what: 'rate limits: per company, per address, wrong credentials, company slots',
    reset: () => {
      const held = companySlotsHeld();
      resetRateLimitsForTests();
      return held.length ? `requests still holding a company's slot (not answered): ${held.join(', ')}` : null;
    },
  },
  {
    what: 'password hashing: the queue and its time estimate',
    reset: () => {
      const underWay = hashesUnderWay();
      resetHashingForTests();
      return underWay ? `${underWay} password hash(es) still running or waiting` : null;
    },
  },
  { what: 'readiness: stopping, migrations seen', reset: resetLifecycleForTests },
  // A stop cannot be taken back: a file that stops the process keeps a process of its own (vitest.config.ts).
  { what: 'the stop', reset: () => (shutdownStarted() ? 'shutdown() ran: a file that stops the process needs one of its own' : null) },
  { what: 'the metrics registry', reset: resetMetricsForTests },
  {
    what: "the console's dashboard cache and session options",
    reset: () => {
      clearDashboardCache();
      forgetAuthOptionsForTests();
    },
  },
  {
    what: 'counters tests read (single statement, check paths, group commits) and the idempotency timing',
    reset: () => {
      for (const [target, values] of startValues) Object.assign(target, values);
    },
  },
  { what: 'open handles: database pools and threads, servers, sockets, timers, child processes', reset: handlesLeft },
];

function restoreEnv(): void {
  for (const key of Object.keys(process.env)) if (!(key in startEnv)) delete process.env[key];
  for (const [key, value] of Object.entries(startEnv)) if (process.env[key] !== value) process.env[key] = value;
}

// What keeps a process alive (process.getActiveResourcesInfo: handles and requests that are
// ref'd) when the worker's first file starts: vitest's own channel to the main process. More of
// a kind after a file means the file left it open. Requests under way a moment (file system,
// lookups) and the current turn's immediates are not counted.
const TRANSIENT = new Set(['FSReqCallback', 'FSReqPromise', 'FileHandleCloseReq', 'GetAddrInfoReqWrap', 'GetNameInfoReqWrap', 'QueryReqWrap', 'Immediate', 'ShutdownWrap', 'WriteWrap']);
let startHandles = countHandles();

function countHandles(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo()) if (!TRANSIENT.has(kind)) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return counts;
}

function extraHandles(): string[] {
  return [...countHandles()].filter(([kind, n]) => n > (startHandles.get(kind) ?? 0)).map(([kind, n]) => `${kind} ×${n - (startHandles.get(kind) ?? 0)}`);
}

/** Waits a little for what is closing (a socket's close, a thread's exit), then names what is still open. */
async function handlesLeft(): Promise<string | null> {
  for (let waited = 0; waited < 3_000; waited += 50) {
    if (!extraHandles().length) return null;
    await new Promise((resolve) => setTimeout(resolve, 50).unref());
  }
  const extra = extraHandles();
  if (!extra.length) return null;
  // Not this file's to close: counted from here on, so the files after it are not blamed for them.
  startHandles = countHandles();
  return `handles still open after the file (not closed in its afterAll): ${extra.join(', ')}`;
}

/**
 * Puts every piece back, then fails if the file left something running or open (every piece is
 * put back first, so one file's leak does not become the next file's failure too).
 */
export async function leaveProcessAsFound(): Promise<void> {
  const left: string[] = [];
  for (const piece of PROCESS_STATE) {
    try {
      const found = await piece.reset();
      if (found) left.push(`${piece.what}: ${found}`);
    } catch (err) {
      left.push(`${piece.what}: could not be put back: ${(err as Error)?.message ?? err}`);
    }
  }
  if (left.length) throw new Error(`This test file left its worker process in another state than it found it:\n- ${left.join('\n- ')}`);
}
