import net from 'node:net';
import { log } from '../log';
import { testRunnerOnly } from '../env';
import { describeHost, needsHostChoice, parsePostgresUrl, type HostPort, type PostgresUrl, type TargetSessionAttrs } from '../net/postgres-url';
import { DatabaseUnavailableError } from './unavailable';

/**
 * Which of a URL's hosts a new connection goes to. postgres.js takes several hosts, but its
 * `read-write` check reads only `default_transaction_read_only`, which a hot standby reports as
 * off, so it settles on a standby; and while no host fits it reconnects in a tight loop, a full
 * PostgreSQL start-up on the standby each time, while queries wait without end. So the driver
 * is given one host and a `socket` function from here: before connecting, the hosts are asked
 * what they are (`pg_is_in_recovery()`, `default_transaction_read_only`) in order, the last one
 * that fitted first, and the connection goes to the first that fits. While none does, rounds are
 * tried for a few seconds, then the connection fails with a DatabaseUnavailableError naming
 * every host and what it was, which a request answers with 503 (lib/api/route.ts) and readiness
 * reports; the next query tries again. The outage is logged once when it starts, the host that
 * takes over once when it does.
 */

export type HostRole = { standby: boolean; readOnly: boolean };

/** The postgres.js factory (the driver module is loaded by the caller only when it is used). */
export type PostgresFactory = typeof import('postgres');

type Tried = { host: HostPort; what: string; role?: HostRole };

export type SelectorTiming = {
  /** Connecting to one host, and asking it what it is. */
  connectTimeoutMs: number;
  /** How long one connection keeps trying rounds before it fails. */
  waitMs: number;
  /** Pause between rounds. */
  roundPauseMs: number;
  /** A host that fitted this recently is connected to without asking again. */
  trustMs: number;
};

const DEFAULT_TIMING: SelectorTiming = { connectTimeoutMs: 3_000, waitMs: 3_000, roundPauseMs: 250, trustMs: 1_000 };

const WANTED: Record<TargetSessionAttrs, string> = {
  any: 'reachable',
  'read-write': 'writable',
  primary: 'primary',
  'read-only': 'read-only',
  standby: 'standby',
  'prefer-standby': 'standby (or other reachable)',
};

function fits(attrs: TargetSessionAttrs, role: HostRole): boolean {
  switch (attrs) {
    case 'read-write':
      return !role.standby && !role.readOnly;
    case 'primary':
      return !role.standby;
    case 'read-only':
      return role.standby || role.readOnly;
    case 'standby':
    case 'prefer-standby':
      return role.standby;
    default:
      return true;
  }
}

/** The latest finding of a failed round, per URL variable, process-wide (readiness says it). */
const problems: Map<string, string> = ((globalThis as { __billingHostProblems?: Map<string, string> }).__billingHostProblems ??= new Map());

/** Tests only: no round's finding kept, as in a new process. */
export function forgetHostProblemsForTests(): void {
  testRunnerOnly('forgetHostProblemsForTests');
  problems.clear();
}

/** Why no host of `label`'s URL fits, as the last round found, or null while one does. */
export function hostProblem(label = 'DATABASE_URL'): string | null {
  return problems.get(label) ?? null;
}

const describeRole = (r: HostRole) => (r.standby ? 'standby' : r.readOnly ? 'primary, read-only' : 'primary');

function describeFailure(err: unknown): string {
  const e = err as { code?: string; message?: string };
  if (e?.code === 'ECONNREFUSED') return 'connection refused';
  if (e?.code === 'CONNECT_TIMEOUT' || e?.code === 'ETIMEDOUT' || e?.message === 'timeout') return 'no answer';
  if (e?.code === '57P03') return 'starting up or shutting down';
  if (e?.code === '28P01' || e?.code === '28000') return 'authentication failed';
  return e?.code ? `error ${e.code}` : 'unreachable';
}

export class HostSelector {
  private current: HostPort | null = null;
  private trustedUntil = 0;
  private round: Promise<HostPort> | null = null;
  private outage = false;
  private readonly timing: SelectorTiming;

  constructor(
    readonly url: PostgresUrl,
    /** The variable the URL came from, for logs and errors. */
    readonly label: string,
    private readonly ask: (host: HostPort) => Promise<HostRole>,
    timing: Partial<SelectorTiming> = {},
  ) {
    this.timing = { ...DEFAULT_TIMING, ...timing };
  }

  /** postgres.js's `socket` option: a socket connected to a host that fits, or one that fails with why none does. */
  readonly socket = async (): Promise<net.Socket> => {
    for (let attempt = 0; ; attempt++) {
      let host: HostPort;
      try {
        host = await this.choose();
      } catch (err) {
        return failingSocket(err);
      }
      try {
        return await connectTcp(host, this.timing.connectTimeoutMs);
      } catch (err) {
        // It fitted a moment ago and is gone now: ask the hosts again, once.
        this.forget(host);
        if (attempt > 0) return failingSocket(new DatabaseUnavailableError(`${this.label}: ${describeHost(host)} (${describeFailure(err)}) went away while connecting.`));
      }
    }
  };

  /** The host connections go to now, if one was found. */
  get chosen(): HostPort | null {
    return this.current;
  }

  /** Makes the next connection ask the hosts again (a connection to `host` failed). */
  forget(host?: HostPort): void {
    if (!host || (this.current && sameHost(this.current, host))) this.trustedUntil = 0;
  }

  private choose(): Promise<HostPort> {
    if (this.current && Date.now() < this.trustedUntil) return Promise.resolve(this.current);
    // Connections opened together (a pool refilling after a failover) share one round of questions.
    this.round ??= this.search().finally(() => {
      this.round = null;
    });
    return this.round;
  }

  private async search(): Promise<HostPort> {
    const until = Date.now() + this.timing.waitMs;
    for (;;) {
      const { found, tried } = await this.askAll();
      if (found) {
        const moved = this.current !== null && !sameHost(this.current, found);
        if (this.outage || moved) {
          log.warn({ host: describeHost(found), hosts_tried: tried.map(describeTried) }, `${this.label}: connections go to ${describeHost(found)} (${describeRole(tried.find((t) => sameHost(t.host, found))!.role!)}) now`);
        }
        this.outage = false;
        problems.delete(this.label);
        this.current = found;
        this.trustedUntil = Date.now() + this.timing.trustMs;
        return found;
      }
      const message = `No ${WANTED[this.url.attrs]} host among the ${this.url.hosts.length} of ${this.label}: ${tried.map(describeTried).join(', ')}.`;
      problems.set(this.label, message);
      if (Date.now() + this.timing.roundPauseMs >= until) {
        if (!this.outage) log.error({ hosts_tried: tried.map(describeTried) }, `${message} Retrying until one is.`);
        this.outage = true;
        throw new DatabaseUnavailableError(message);
      }
      await new Promise((r) => setTimeout(r, this.timing.roundPauseMs));
    }
  }

  /** Asks the hosts what they are, the last one chosen first, and stops at the first that fits. */
  private async askAll(): Promise<{ found: HostPort | null; tried: Tried[] }> {
    const order = this.current ? [this.current, ...this.url.hosts.filter((h) => !sameHost(h, this.current!))] : [...this.url.hosts];
    const tried: Tried[] = [];
    for (const host of order) {
      try {
        const role = await this.ask(host);
        tried.push({ host, what: describeRole(role), role });
        if (fits(this.url.attrs, role)) return { found: host, tried };
      } catch (err) {
        tried.push({ host, what: describeFailure(err) });
      }
    }
    // prefer-standby: no standby answered; any host that answered will do.
    if (this.url.attrs === 'prefer-standby') {
      const reachable = tried.find((t) => t.role);
      if (reachable) return { found: reachable.host, tried };
    }
    return { found: null, tried };
  }
}

const describeTried = (t: Tried) => `${describeHost(t.host)} (${t.what})`;

function sameHost(a: HostPort, b: HostPort): boolean {
  return a.host === b.host && a.port === b.port;
}

function connectTcp(host: HostPort, timeoutMs: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: host.host, port: host.port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' }));
    }, timeoutMs);
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.removeAllListeners('error');
      // postgres.js names the TLS server from these.
      Object.assign(socket, { host: host.host, port: host.port });
      resolve(socket);
    });
  });
}

/**
 * A socket that fails with `err` once the driver has written its start-up message to it.
 * postgres.js leaves a connection stuck for good when its `socket` function throws, so a socket
 * that fails is how "no host fits" reaches the query: the driver rejects the query that wanted the
 * connection and puts the connection back, to be tried again by the next query. Failing only after
 * the first write keeps the driver's write timer clear even without the repair
 * scripts/patch-dependencies.mjs makes at install.
 */
function failingSocket(err: unknown): net.Socket {
  const socket = new net.Socket();
  const error = err instanceof Error ? err : new DatabaseUnavailableError(String(err));
  let failed = false;
  const fail = () => {
    if (failed) return;
    failed = true;
    clearTimeout(timer);
    setImmediate(() => socket.destroy(error));
  };
  socket.write = (() => {
    fail();
    return true;
  }) as typeof socket.write;
  const timer = setTimeout(fail, 1_000);
  return socket;
}

/** Asks one host what it is, on a connection of its own that is closed at once. */
export function askWithDriver(postgres: PostgresFactory, url: PostgresUrl, timeoutMs: number): (host: HostPort) => Promise<HostRole> {
  return async (host) => {
    const sql = postgres(url.singleHostUrl, {
      host: host.host,
      port: host.port,
      max: 1,
      connect_timeout: Math.max(1, Math.ceil(timeoutMs / 1000)),
      prepare: false,
      fetch_types: false,
      onnotice: () => {},
      connection: { application_name: 'billing-host-check' },
    });
    let timer: NodeJS.Timeout | undefined;
    try {
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })), timeoutMs);
      });
      const [row] = await Promise.race([sql.unsafe<{ standby: boolean; read_only: string }[]>("select pg_is_in_recovery() as standby, current_setting('default_transaction_read_only') as read_only"), late]);
      return { standby: row.standby === true, readOnly: row.read_only === 'on' };
    } finally {
      clearTimeout(timer);
      void sql.end({ timeout: 0 }).catch(() => {});
    }
  };
}

/**
 * What to give postgres.js for a URL: the URL itself when it names one host and no session
 * requirement; otherwise its first host only, with a HostSelector's `socket`.
 */
export function driverTarget(rawUrl: string, label: string, postgres: PostgresFactory, timing: Partial<SelectorTiming> = {}): { url: string; selector: HostSelector | null } {
  const url = parsePostgresUrl(rawUrl);
  if (!needsHostChoice(url)) return { url: rawUrl, selector: null };
  const t = { ...DEFAULT_TIMING, ...timing };
  return { url: url.singleHostUrl, selector: new HostSelector(url, label, askWithDriver(postgres, url, t.connectTimeoutMs), t) };
}
