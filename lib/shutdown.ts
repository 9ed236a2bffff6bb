import type { Server } from 'node:http';
import { isIdleBetweenRequests, trackedConnections } from './http/connections';
import { stopListening } from './http/listener';
import { closeDatabase } from './db/client';
import { markStopping } from './probes';
import { log } from './log';
import { flushTracing } from './tracing';
import { setting } from './env';
import { stopWorker } from './jobs/worker';

/**
 * A clean stop on SIGTERM: readiness answers 503 at once and every answer from then on says
 * `Connection: close`; the HTTP servers go on serving for SHUTDOWN_DELAY_MS (0 unless set; 5 s
 * in the image: a load balancer that still sends requests meanwhile gets them answered), then
 * stop accepting without resetting a connection the kernel had completed, and answer every
 * request whose connection was accepted; the in-process worker stops claiming, gives back what it
 * claimed and has not started, and finishes the webhook sends under way; then the database
 * closes and the process exits 0. All of it within SHUTDOWN_TIMEOUT_MS (25 s by default), and
 * closing within CLOSE_GRACE_MS more (29 s in all, below Kubernetes' 30 s grace period); what is
 * still running then is cut off (its leases expire and another process takes the work over) and
 * the process exits 1.
 */
// Closing the pools and sending buffered spans get this long together on top of the timeout
// before the process exits regardless: 29 s in all by default, inside a 30 s grace period.
export const CLOSE_GRACE_MS = 4_000;
// How often a draining server closes the keep-alive connections that went idle meanwhile.
const IDLE_SWEEP_MS = 100;

export function shutdownTimeoutMs(): number {
  return setting('SHUTDOWN_TIMEOUT_MS');
}

/** How long the servers go on accepting after the signal: within the timeout, never all of it. */
function shutdownDelayMs(timeout: number): number {
  const delay = setting('SHUTDOWN_DELAY_MS');
  return delay < timeout ? delay : 0;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

type State = { started: boolean; done?: Promise<number> };
const state: State = ((globalThis as { __billingShutdownState?: State }).__billingShutdownState ??= { started: false });

const closing = new WeakSet<Server>();

/**
 * From now on every answer of the server says `Connection: close` (answers under way that have
 * not started included), so keep-alive clients open their next connection elsewhere.
 */
export function answerWithClose(server: Server): void {
  if (closing.has(server)) return;
  closing.add(server);
  server.prependListener('request', (_req, res) => {
    if (!res.headersSent) res.setHeader('Connection', 'close');
  });
  for (const state of trackedConnections(server)?.values() ?? []) for (const res of state.responses) if (!res.headersSent) res.setHeader('Connection', 'close');
}

/**
 * Stops accepting connections and waits for the requests under way. Every answer from now on says
 * `Connection: close`. On a server whose connections are recorded (trackConnections: the one
 * scripts/serve.mjs starts), a connection that has not sent its first request yet is waited for
 * and answered, since its client may already have sent it, and only connections idle between
 * requests are closed; elsewhere idle connections are closed as Node.js sees them. New connections
 * are refused once the listener is closed. At the deadline every connection left is closed.
 * Resolves true when everything finished in time.
 */
export function drainServer(server: Server, deadline: number): Promise<boolean> {
  return new Promise((resolve) => {
    answerWithClose(server);
    const connections = trackedConnections(server);
    const closeIdle = connections
      ? () => {
          for (const [socket, state] of connections) if (isIdleBetweenRequests(socket, state)) socket.destroy();
        }
      : () => server.closeIdleConnections();
    const sweep = setInterval(closeIdle, IDLE_SWEEP_MS);
    const cutoff = setTimeout(() => {
      clearInterval(sweep);
      server.closeAllConnections();
      resolve(false);
    }, Math.max(0, deadline - Date.now()));
    const closed = () => {
      clearInterval(sweep);
      clearTimeout(cutoff);
      resolve(true);
    };
    if (connections) stopListening(server, closed);
    else server.close(closed);
    closeIdle();
  });
}

function beforeDeadline(work: Promise<unknown>, deadline: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
  });
  const done = work.then(
    () => true,
    (err) => {
      log.error({ err }, 'shutdown step failed');
      return false;
    },
  );
  return Promise.race([done, late]).finally(() => clearTimeout(timer));
}

/**
 * Runs the stop sequence once (later calls get the same outcome) and resolves with the exit code:
 * 0 when everything finished in time, 1 when something had to be cut off. `servers` are drained
 * first (after SHUTDOWN_DELAY_MS unless `immediate`); `keepOpen` (a probe port) stays up
 * answering 503 until the end.
 */
export function shutdown(opts: { servers?: Iterable<Server>; keepOpen?: Server[]; immediate?: boolean } = {}): Promise<number> {
  if (state.done) return state.done;
  state.started = true;
  markStopping();
  state.done = (async () => {
    const timeout = shutdownTimeoutMs();
    const delay = opts.immediate ? 0 : shutdownDelayMs(timeout);
    log.info({ timeout_ms: timeout, delay_ms: delay }, 'stopping: finishing requests and background work');
    const deadline = Date.now() + timeout;
    const servers = [...(opts.servers ?? [])];
    // During the delay too: a client that keeps its connection would stay with this process.
    for (const s of servers) if (s.listening) answerWithClose(s);
    const [http, worker] = await Promise.all([
      (delay > 0 && servers.length ? sleep(delay) : Promise.resolve())
        .then(() => Promise.all(servers.map((s) => (s.listening ? drainServer(s, deadline) : Promise.resolve(true)))))
        .then((r) => r.every(Boolean)),
      beforeDeadline(stopWorker(), deadline),
    ]);
    if (!http) log.error(`shutdown: requests still running after ${timeout} ms were cut off`);
    if (!worker) log.error(`shutdown: background work still running after ${timeout} ms was cut off; its leases expire and another process takes it over`);
    const end = Math.max(deadline, Date.now()) + CLOSE_GRACE_MS;
    const closed = await beforeDeadline(closeDatabase(), end);
    // Spans still buffered are sent in what is left of it; tracing is not worth a failed stop.
    await beforeDeadline(flushTracing(), end);
    for (const s of opts.keepOpen ?? []) {
      s.closeAllConnections();
      s.close();
    }
    const code = http && worker && closed ? 0 : 1;
    log.info({ exit_code: code }, 'stopped');
    return code;
  })();
  return state.done;
}

/** Whether a stop has begun in this process. */
export function shutdownStarted(): boolean {
  return state.started;
}

/** Stops on SIGTERM or SIGINT (once; a second signal changes nothing) and exits with the outcome. */
export function exitOnSignals(opts: Parameters<typeof shutdown>[0] | (() => Parameters<typeof shutdown>[0]) = {}): void {
  const stop = () => {
    const options = typeof opts === 'function' ? opts() : opts;
    void shutdown(options).then((code) => process.exit(code));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
