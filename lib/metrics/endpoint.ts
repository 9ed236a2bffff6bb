import cluster from 'node:cluster';
import { timingSafeEqual } from 'node:crypto';
import { ApiError, errorEnvelope } from '../errors';
import { newRequestId } from '../api/route';
import { log } from '../log';
import { metricsToken, readDatabaseGaugesWith, registry } from './registry';
import { readDatabaseGauges } from './database';

readDatabaseGaugesWith(readDatabaseGauges);

export type MetricsAnswer = { status: number; body: string; headers: Record<string, string> };

// Longer than prom-client's own 5 s wait for the processes' answers in the primary.
const PRIMARY_TIMEOUT_MS = 8_000;

function refusal(err: ApiError): MetricsAnswer {
  const requestId = newRequestId();
  return {
    status: err.status,
    body: JSON.stringify(errorEnvelope(err, requestId)),
    headers: { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store', 'Request-Id': requestId, ...err.headers },
  };
}

function sameToken(given: string, token: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

let asked = 0;

/**
 * With WEB_CONCURRENCY > 1 every process counts its own requests: the cluster primary
 * (scripts/serve.mjs) gathers all of them with prom-client's AggregatorRegistry, so one scrape
 * of the shared port sees the whole container.
 */
function fromPrimary(): Promise<string> {
  return new Promise((resolve, reject) => {
    const id = `${process.pid}:${++asked}`;
    const onMessage = (message: { type?: string; id?: string; text?: string; error?: string }) => {
      if (message?.type !== 'billing:metrics' || message.id !== id) return;
      clearTimeout(timer);
      process.off('message', onMessage);
      if (typeof message.text === 'string') resolve(message.text);
      else reject(new Error(message.error ?? 'no metrics from the cluster primary'));
    };
    const timer = setTimeout(() => {
      process.off('message', onMessage);
      reject(new Error(`the cluster primary did not answer within ${PRIMARY_TIMEOUT_MS} ms`));
    }, PRIMARY_TIMEOUT_MS);
    process.on('message', onMessage);
    process.send!({ type: 'billing:metrics-request', id });
  });
}

/**
 * `GET /metrics` (the server, and the worker's probe port): Prometheus' text format for
 * `Authorization: Bearer <METRICS_TOKEN>`; 401 for another token; 404, as for a path that does
 * not exist, while METRICS_TOKEN is unset.
 */
export async function answerMetrics(authorization: string | null): Promise<MetricsAnswer> {
  let token: string | null;
  try {
    token = metricsToken();
  } catch {
    token = null;
  }
  if (!token) return refusal(new ApiError('not_found', 'No such route.'));
  const given = authorization?.toLowerCase().startsWith('bearer ') ? authorization.slice(7).trim() : '';
  if (!given || !sameToken(given, token)) {
    return refusal(
      new ApiError('unauthorized', 'Metrics need the metrics token: Authorization: Bearer <METRICS_TOKEN>.', null, {}, { 'WWW-Authenticate': 'Bearer realm="billing-metrics"' }),
    );
  }
  const own = registry();
  let body: string;
  if (cluster.isWorker && process.send) {
    try {
      body = await fromPrimary();
    } catch (err) {
      // One process's counters in place of the sum would look like a counter reset to Prometheus
      // (rate() would jump by the whole total): this scrape fails instead, and the next one counts.
      log.warn({ err }, "metrics: the cluster's processes could not be gathered (one may be starting or restarting); answering 503");
      return refusal(new ApiError('service_unavailable', "The metrics of every serving process could not be gathered (one may be starting or restarting); scrape again."));
    }
  } else {
    body = await own.metrics();
  }
  return { status: 200, body, headers: { 'Content-Type': own.contentType, 'Cache-Control': 'no-store' } };
}
