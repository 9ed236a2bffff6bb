import { sleep } from './processes';

/** What one attempt got: an HTTP answer, or no answer at all (status 0, with why). */
export type Reply = { status: number; body: any; error?: undefined } | { status: 0; body?: undefined; error: string };

/** What the caller makes of an answer: done, try again (same request, same keys), or a defect. */
export type Verdict = 'ack' | 'retry' | 'fatal';

export type Stats = { requests: number; retries: number; byOutcome: Record<string, number> };

/**
 * The company backend's side: every call goes to one of the app processes (the next one in
 * turn, so a dead process costs one attempt) and is retried with the same idempotency keys
 * until it is acknowledged.
 */
export class Client {
  private turn = 0;

  constructor(
    private urls: () => string[],
    private authorization: string,
    private deadline: () => number,
    readonly stats: Stats = { requests: 0, retries: 0, byOutcome: {} },
    /** Answers that no correct service gives to these requests: each fails the scenario. */
    readonly defects: string[] = [],
  ) {}

  /** The same client with other credentials, sharing its counts and defects. */
  as(authorization: string): Client {
    return new Client(this.urls, authorization, this.deadline, this.stats, this.defects);
  }

  async send(method: string, path: string, opts: { body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {}): Promise<Reply> {
    const urls = this.urls();
    const base = urls[this.turn++ % urls.length];
    const headers: Record<string, string> = { ...opts.headers };
    headers.authorization = this.authorization;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    this.stats.requests++;
    try {
      const res = await fetch(`${base}${path}`, {
        method,
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
      });
      const text = await res.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        /* not JSON */
      }
      this.count(String(res.status));
      // A 503 tells the caller when to try again, in the error shape (the failover test holds it to that).
      if (res.status === 503 && (!res.headers.get('retry-after') || (body as { error?: { type?: string } })?.error?.type !== 'service_unavailable')) {
        this.count('503 without Retry-After or service_unavailable');
      }
      return { status: res.status, body };
    } catch (err) {
      const e = err as { name?: string; cause?: { code?: string } };
      const why = e.name === 'TimeoutError' ? 'timeout' : (e.cause?.code ?? e.name ?? 'error');
      this.count(why);
      return { status: 0, error: why };
    }
  }

  private count(outcome: string): void {
    this.stats.byOutcome[outcome] = (this.stats.byOutcome[outcome] ?? 0) + 1;
  }

  /**
   * Sends until `decide` acknowledges the answer. Connection errors, timeouts, 5xx, 429 and
   * 409 "in progress" are retried by default; `decide` sees every answer first.
   */
  async untilAcknowledged(label: string, attempt: () => Promise<Reply>, decide: (r: Reply) => Verdict | undefined): Promise<Reply> {
    for (let n = 0; ; n++) {
      const r = await attempt();
      const verdict = decide(r) ?? defaultVerdict(r);
      if (verdict === 'ack') return r;
      if (verdict === 'fatal') {
        this.defects.push(`${label}: ${r.status} ${JSON.stringify(r.body ?? r.error).slice(0, 500)}`);
        return r;
      }
      if (Date.now() > this.deadline()) {
        this.defects.push(`${label}: never acknowledged; last answer ${r.status} ${JSON.stringify(r.body ?? r.error).slice(0, 500)}`);
        return r;
      }
      this.stats.retries++;
      await sleep(Math.min(1_000, 50 * 2 ** Math.min(n, 5)) * (0.5 + Math.random()));
    }
  }
}

/** An Idempotency-Key still marked in progress: its first request died with its process, or is still running. */
export function stillInProgress(r: Reply): boolean {
  return r.status === 409 && /Idempotency-Key is still in progress/.test(r.body?.error?.message ?? '');
}

export function defaultVerdict(r: Reply): Verdict {
  if (r.status === 0 || r.status >= 500 || r.status === 429) return 'retry';
  // An Idempotency-Key still marked in progress, or another piece of work on the account (a plan change).
  if (r.status === 409 && /in progress/.test(r.body?.error?.message ?? '')) return 'retry';
  if (r.status >= 200 && r.status < 300) return 'ack';
  return 'fatal';
}
