import cluster from 'node:cluster';
import { AggregatorRegistry, Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { setting, testRunnerOnly } from '../env';

/**
 * The process's metrics, in one registry on globalThis (route handlers, pages, instrumentation
 * and the worker loop get module instances of their own and must count into the same series).
 * Every name is listed in README "Metrics and logs" and used by deploy/grafana-dashboard.json.
 *
 * `aggregator` says how a cluster primary (WEB_CONCURRENCY > 1) merges the processes' values:
 * counts and histograms add up; the gauges read from the database are the same in every
 * process, so the primary keeps the largest.
 */
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

type Hooks = { readDatabase?: () => Promise<void> };
const hooks: Hooks = ((globalThis as { __billingMetricsHooks?: Hooks }).__billingMetricsHooks ??= {});

/**
 * Gives the reader of the gauges that come from the database (lib/metrics/database.ts). The
 * process that serves metrics passes it at start: the reader knows the database and the worker's
 * tasks, which sit above these instruments.
 */
export function readDatabaseGaugesWith(read: () => Promise<void>): void {
  hooks.readDatabase = read;
}

/** The gauges read from the database fill themselves when scraped (one reading for all of them). */
async function collectFromDatabase(): Promise<void> {
  await hooks.readDatabase?.();
}

function define(registry: Registry) {
  const registers = [registry];
  return {
    httpRequests: new Counter({
      name: 'billing_http_requests_total',
      help: 'Requests answered, by method, route pattern and status.',
      labelNames: ['method', 'route', 'status'] as const,
      registers,
    }),
    httpDuration: new Histogram({
      name: 'billing_http_request_duration_seconds',
      help: 'Time to answer a request, by method, route pattern and status.',
      labelNames: ['method', 'route', 'status'] as const,
      buckets: SECONDS,
      registers,
    }),
    events: new Counter({
      name: 'billing_events_total',
      help: 'Events recorded, and refused for want of balance (402), by call (single or batch).',
      labelNames: ['call', 'outcome'] as const,
      registers,
    }),
    batchSize: new Histogram({
      name: 'billing_event_batch_size',
      help: 'Items per accepted call of POST /v1/events.',
      buckets: [1, 10, 50, 100, 250, 500, 1000],
      registers,
    }),
    taskRuns: new Counter({
      name: 'billing_worker_task_runs_total',
      help: 'Runs of each worker task, by outcome (ok or error).',
      labelNames: ['task', 'outcome'] as const,
      registers,
    }),
    taskItems: new Counter({
      name: 'billing_worker_task_items_total',
      help: 'Items handled by each worker task.',
      labelNames: ['task'] as const,
      registers,
    }),
    taskDuration: new Histogram({
      name: 'billing_worker_task_duration_seconds',
      help: 'Time of one run of a worker task.',
      labelNames: ['task'] as const,
      buckets: SECONDS,
      registers,
    }),
    workerLag: new Gauge({
      name: 'billing_worker_lag_seconds',
      help: 'How long the oldest due work of each task has waited to start (0 when nothing is overdue).',
      labelNames: ['task'] as const,
      aggregator: 'max',
      collect: collectFromDatabase,
      registers,
    }),
    webhookBacklog: new Gauge({
      name: 'billing_webhook_backlog',
      help: 'Webhook deliveries not yet delivered: due now, waiting for a scheduled retry, or being sent.',
      labelNames: ['state'] as const,
      aggregator: 'max',
      collect: collectFromDatabase,
      registers,
    }),
    webhookOldest: new Gauge({
      name: 'billing_webhook_oldest_waiting_seconds',
      help: 'Age of the oldest webhook delivery not yet delivered (0 when none waits).',
      aggregator: 'max',
      collect: collectFromDatabase,
      registers,
    }),
    chargesPending: new Gauge({
      name: 'billing_charges_pending',
      help: 'Charges whose outcome at the processor is not known yet.',
      aggregator: 'max',
      collect: collectFromDatabase,
      registers,
    }),
    chargeOldest: new Gauge({
      name: 'billing_charge_oldest_pending_seconds',
      help: 'Age of the oldest pending charge (0 when none is pending).',
      aggregator: 'max',
      collect: collectFromDatabase,
      registers,
    }),
    poolMax: new Gauge({
      name: 'billing_db_pool_max',
      help: "Connections this process's database pool may open (1 for the embedded database).",
      collect: collectFromDatabase,
      registers,
    }),
    dbConnections: new Gauge({
      name: 'billing_db_connections',
      help: "The database's client connections by state (PostgreSQL only; every process's, not this one's).",
      labelNames: ['state'] as const,
      aggregator: 'max',
      collect: collectFromDatabase,
      registers,
    }),
    replicaUp: new Gauge({
      name: 'billing_db_replica_up',
      help: 'DATABASE_REPLICA_URL (hosts in `host`): 1 while it answers and takes the reads that may lag, 0 while they go to the primary. Absent without a replica.',
      labelNames: ['host'] as const,
      aggregator: 'min',
      collect: collectFromDatabase,
      registers,
    }),
    replicaLag: new Gauge({
      name: 'billing_db_replica_lag_seconds',
      help: "How far the replica's replay is behind the primary: 0 when it has replayed everything it received. Absent without a replica, or while it does not answer.",
      labelNames: ['host'] as const,
      aggregator: 'max',
      collect: collectFromDatabase,
      registers,
    }),
    collectFailures: new Counter({
      name: 'billing_metrics_collect_failures_total',
      help: 'Scrapes whose database gauges could not be read in time, by source.',
      labelNames: ['source'] as const,
      registers,
    }),
  };
}

export type Metrics = ReturnType<typeof define>;
type Holder = { registry?: Registry; metrics?: Metrics };
const holder: Holder = ((globalThis as { __billingMetrics?: Holder }).__billingMetrics ??= {});

/** The registry, with Node's process metrics (collectDefaultMetrics) and the service's own. */
export function registry(): Registry {
  if (!holder.registry) {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    holder.metrics = define(registry);
    holder.registry = registry;
    if (cluster.isWorker) {
      // Answers the cluster primary's requests for this process's metrics (scripts/serve.mjs).
      AggregatorRegistry.setRegistries([registry]);
      new AggregatorRegistry();
    }
  }
  return holder.registry;
}

export function metrics(): Metrics {
  registry();
  return holder.metrics!;
}

/**
 * Tests only: every series back to nothing counted, as in a new process. The reader of the
 * database gauges stays: lib/metrics/endpoint.ts gives it when loaded, once per process.
 */
export function resetMetricsForTests(): void {
  testRunnerOnly('resetMetricsForTests');
  holder.registry?.resetMetrics();
}

/**
 * METRICS_TOKEN, checked: unset means no /metrics at all (404). A token is sent in a header, so
 * it is printable ASCII without spaces, and at least 16 characters (it guards what the
 * service's traffic looks like).
 */
export function metricsToken(): string | null {
  return setting('METRICS_TOKEN') ?? null;
}
