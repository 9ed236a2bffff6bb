import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { getDatabase, pendingMigrations, query, sql, type DbKind } from './db/client';
import { hostProblem } from './db/hosts';
import { DatabaseUnavailableError } from './db/unavailable';
import { ApiError, errorEnvelope } from './errors';
import { newRequestId } from './api/route';
import { answerMetrics, type MetricsAnswer } from './metrics/endpoint';
import { testRunnerOnly } from './env';
import { observed, recordRequest } from './metrics/requests';

/**
 * Probes for an orchestrator. Liveness needs nothing but a running event loop; readiness needs
 * the database to answer with every committed migration applied, and is lost for good once the
 * process starts shutting down (load balancers stop sending it requests before it stops serving).
 */
type Lifecycle = { stopping: boolean; migrated: boolean };
const lifecycle: Lifecycle = ((globalThis as { __billingLifecycle?: Lifecycle }).__billingLifecycle ??= { stopping: false, migrated: false });

export function markStopping(): void {
  lifecycle.stopping = true;
}

export function isStopping(): boolean {
  return lifecycle.stopping;
}

/** Tests only: not stopping, migrations not seen yet, as in a new process. */
export function resetLifecycleForTests(): void {
  testRunnerOnly('resetLifecycleForTests');
  lifecycle.stopping = false;
  lifecycle.migrated = false;
}

// An orchestrator's probe gives up after its own timeout: answer before it does.
const READY_TIMEOUT_MS = 2_000;

export type Liveness = { status: 'ok' };
export type Readiness = { status: 'ok'; database: DbKind };

export function liveness(): Liveness {
  return { status: 'ok' };
}

function withinTimeout<T>(work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('timeout')), READY_TIMEOUT_MS);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** True once every committed migration is applied; remembered, as a database never loses them. */
export async function migrationsApplied(): Promise<boolean> {
  if (lifecycle.migrated) return true;
  const { db } = await getDatabase();
  lifecycle.migrated = (await pendingMigrations(db)).length === 0;
  return lifecycle.migrated;
}

/**
 * Resolves true once every committed migration is applied, asking every `intervalMs`: with
 * MIGRATE=0 they are `npm run db:migrate`'s, which may run after this process started. A database
 * that does not answer is asked again (readiness says why meanwhile). Resolves false when the
 * process starts stopping first. `waiting` is called once, when the first answer is not yet.
 */
export async function untilMigrated(intervalMs: number, waiting: () => void = () => {}): Promise<boolean> {
  let told = false;
  while (!lifecycle.stopping) {
    try {
      if (await migrationsApplied()) return !lifecycle.stopping;
    } catch {
      // Asked again.
    }
    if (!told) waiting();
    told = true;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  return false;
}

/** Throws 503 `service_unavailable` saying why this process should not get traffic now. */
export async function readiness(): Promise<Readiness> {
  if (lifecycle.stopping) throw new ApiError('service_unavailable', 'The service is shutting down.');
  let kind: DbKind;
  let pending: { tag: string }[] = [];
  try {
    const database = await withinTimeout(getDatabase());
    kind = database.kind;
    if (lifecycle.migrated) await withinTimeout(query(database.db, sql`select 1`));
    else pending = await withinTimeout(pendingMigrations(database.db));
  } catch (err) {
    // Several hosts, none of them writable: the answer names each host and what it was.
    const problem = err instanceof DatabaseUnavailableError ? err.message : hostProblem();
    throw new ApiError('service_unavailable', problem ?? `The database does not answer (within ${READY_TIMEOUT_MS} ms).`);
  }
  if (pending.length) {
    throw new ApiError(
      'service_unavailable',
      `${pending.length} migration(s) not applied (first: ${pending[0].tag}): run npm run db:migrate.`,
    );
  }
  lifecycle.migrated = true;
  if (lifecycle.stopping) throw new ApiError('service_unavailable', 'The service is shutting down.');
  return { status: 'ok', database: kind };
}

export type ProbeAnswer = { status: number; body: string; requestId: string };

/** A probe's answer in the API's envelope: `{"data": ...}`, or the error shape with 503. */
export async function answerProbe(probe: () => unknown): Promise<ProbeAnswer> {
  const requestId = newRequestId();
  try {
    return { status: 200, body: JSON.stringify({ data: await probe() }), requestId };
  } catch (err) {
    const e = err instanceof ApiError ? err : new ApiError('service_unavailable', 'The service cannot answer.');
    return { status: e.status, body: JSON.stringify(errorEnvelope(e, requestId)), requestId };
  }
}

const HEADERS = { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' };

/** The route handler form of a probe. */
export async function probeResponse(probe: () => unknown): Promise<Response> {
  const a = await answerProbe(probe);
  return new Response(a.body, { status: a.status, headers: { ...HEADERS, 'Request-Id': a.requestId } });
}

/** A probe's route handler, in the access log at debug (an orchestrator asks every few seconds). */
export function probeRoute(probe: () => unknown): (req: Request, context: { params: Promise<Record<string, string>> }) => Promise<Response> {
  return observed(false, () => probeResponse(probe), true);
}

const PROBE_PATHS = new Set(['/livez', '/readyz', '/health', '/metrics']);

/**
 * `/livez` and `/readyz` (and `/health`), and `/metrics`, on a port of their own, for processes
 * that serve no HTTP otherwise (the worker).
 */
export function startProbeServer(port: number, host = '0.0.0.0'): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const started = performance.now();
    const path = new URL(req.url ?? '/', 'http://probe').pathname;
    const probe = path === '/livez' ? liveness : path === '/readyz' || path === '/health' ? readiness : null;
    const answered = (status: number, requestId: string | null) =>
      recordRequest({ method: req.method ?? 'GET', route: PROBE_PATHS.has(path) ? path : '/{unknown}', status, seconds: (performance.now() - started) / 1000, requestId, companyId: null, quiet: true });
    if (path === '/metrics' && (req.method === 'GET' || req.method === 'HEAD')) {
      void answerMetrics(req.headers.authorization ?? null).then((m: MetricsAnswer) => {
        res.writeHead(m.status, m.headers);
        res.end(req.method === 'HEAD' ? undefined : m.body);
        answered(m.status, m.headers['Request-Id'] ?? null);
      });
      return;
    }
    void (async () => {
      const a = probe
        ? req.method === 'GET' || req.method === 'HEAD'
          ? await answerProbe(probe)
          : await answerProbe(() => {
              throw new ApiError('not_found', `${req.method} is not supported on ${path}; it answers GET.`);
            })
        : await answerProbe(() => {
            throw new ApiError('not_found', `No probe at ${path}: this port answers /livez, /readyz and /metrics.`);
          });
      res.writeHead(a.status, { ...HEADERS, 'Request-Id': a.requestId });
      res.end(req.method === 'HEAD' ? undefined : a.body);
      answered(a.status, a.requestId);
    })();
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
