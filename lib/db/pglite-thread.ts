import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';

/**
 * The embedded database on a thread of its own (scripts/pglite-thread.mjs). PGlite executes
 * statements synchronously on the thread that owns it: in the server's thread, every statement
 * stopped request parsing and rendering. Here it runs beside them, on another core.
 *
 * This is the part of PGlite's client that drizzle and `runCompiled` use: `query` (with
 * `rowMode`, and type parsers that keep the text as it is), `exec` and `transaction`. Statements
 * outside a transaction wait for an open one, as in PGlite itself: its mutex runs in the thread.
 */

type Fields = { name: string; dataTypeID: number }[];
export type Results<T = unknown> = { rows: T[]; fields: Fields; affectedRows?: number };
type QueryOptions = { rowMode?: 'array' | 'object'; parsers?: Record<number, (value: string, typeId: number) => unknown> };

/** A database error rebuilt on this side, with PostgreSQL's fields (`code`, `constraint`...). */
export class ThreadDatabaseError extends Error {
  [field: string]: unknown;
}

type Pending = { resolve: (value: unknown) => void; reject: (err: Error) => void };

/** The threads of this process that have not stopped: one per embedded database open here. */
const running: Set<Worker> = ((globalThis as { __billingPgliteThreads?: Set<Worker> }).__billingPgliteThreads ??= new Set());

/** How many embedded databases this process has open (their threads not stopped). */
export function embeddedThreadsRunning(): number {
  return running.size;
}

export const threadScript = () => path.join(process.cwd(), 'scripts', 'pglite-thread.mjs');

/**
 * PGlite's WebAssembly, compiled once a process and handed to each thread it starts: a thread that
 * compiles its own pays the compile again, and starts its code over at the baseline tier, every
 * database it opens (a test worker opens one a file: bench/README.md, "An embedded test
 * database's open"). Where the file is not beside the app (a layout without node_modules), each thread
 * compiles its own, as PGlite does by itself.
 */
const compiled = globalThis as { __billingPgliteModule?: Promise<WebAssembly.Module | undefined> };
export function pgliteModule(): Promise<WebAssembly.Module | undefined> {
  compiled.__billingPgliteModule ??= (async () => {
    const file = path.join(process.cwd(), 'node_modules', '@electric-sql', 'pglite', 'dist', 'pglite.wasm');
    try {
      return await WebAssembly.compile(await fs.promises.readFile(file));
    } catch {
      return undefined;
    }
  })();
  return compiled.__billingPgliteModule;
}

export interface ThreadClient {
  query<T = Record<string, unknown>>(text: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>>;
  exec(text: string): Promise<Results[]>;
  transaction<T>(fn: (tx: ThreadTransaction) => Promise<T>): Promise<T>;
}
export interface ThreadTransaction extends ThreadClient {
  rollback(): Promise<void>;
  readonly closed: boolean;
}

export class PGliteThread implements ThreadClient {
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private nextTx = 1;
  private dead: Error | null = null;
  private closing = false;
  private ready = false;
  readonly waitReady: Promise<void>;
  /** Settles with the error when the thread stops after starting, other than by `close` (it never settles otherwise). */
  readonly lost: Promise<Error>;

  /** Starts the thread; `wasm` is PGlite's compiled module (`pgliteModule()`), else the thread compiles its own. */
  constructor(dataDir: string | null, wasm?: WebAssembly.Module) {
    this.worker = new Worker(threadScript(), { workerData: { dataDir, pgliteWasmModule: wasm } });
    running.add(this.worker);
    // The thread keeps the process alive only while a statement is on its way.
    this.worker.unref();
    this.worker.on('message', (m: { id: number; result?: unknown; error?: Record<string, unknown> }) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (this.pending.size === 0) this.worker.unref();
      if (m.error) p.reject(rebuild(m.error));
      else p.resolve(m.result);
    });
    let lose: (err: Error) => void = () => {};
    this.lost = new Promise<Error>((resolve) => (lose = resolve));
    const die = (err: Error) => {
      if (this.ready && !this.closing && !this.dead) lose(err);
      this.dead ??= err;
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      this.worker.unref();
    };
    this.worker.on('error', die);
    this.worker.on('exit', (code) => {
      running.delete(this.worker);
      die(new Error(`the embedded database's thread stopped (exit code ${code})`));
    });
    // A database that cannot start gives its thread back: the caller may try to open it again.
    this.waitReady = this.call({ op: 'ready' }).then(
      () => {
        this.ready = true;
      },
      async (err: Error) => {
        this.dead ??= err;
        await this.worker.terminate();
        throw err;
      },
    );
  }

  private call<T>(message: Record<string, unknown>): Promise<T> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      try {
        this.worker.postMessage({ ...message, id });
      } catch (err) {
        // A value that cannot cross to the thread: nothing was sent, nothing waits.
        reject(err as Error);
        return;
      }
      if (this.pending.size === 0) this.worker.ref();
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
    });
  }

  query<T = Record<string, unknown>>(text: string, params: unknown[] = [], options: QueryOptions = {}, tx?: number): Promise<Results<T>> {
    return this.call({ op: 'query', text, params: params.map(cloneable), rowMode: options.rowMode ?? 'object', raw: rawTypes(options.parsers), tx });
  }

  exec(text: string, tx?: number): Promise<Results[]> {
    return this.call({ op: 'exec', text, tx });
  }

  async transaction<T>(fn: (tx: ThreadTransaction) => Promise<T>): Promise<T> {
    const id = this.nextTx++;
    // Not awaited: the first statement follows the BEGIN at once (the thread runs it once the
    // transaction is open), which saves a round trip while the transaction holds the database.
    const begun = this.call({ op: 'begin', tx: id });
    begun.catch(() => {});
    let closed = false;
    const check = () => {
      if (closed) throw new Error('Transaction is closed');
    };
    const tx: ThreadTransaction = {
      query: (text, params, options) => (check(), this.query(text, params, options, id)),
      exec: (text) => (check(), this.exec(text, id)),
      transaction: () => Promise.reject(new Error('a transaction inside a transaction is a savepoint: use the transaction handle')),
      rollback: async () => {
        check();
        closed = true;
        await this.call({ op: 'rollback', tx: id });
      },
      get closed() {
        return closed;
      },
    };
    let result: T;
    try {
      result = await fn(tx);
      await begun;
    } catch (err) {
      // Every transaction the thread was told of ends with a message, which also ends its queue
      // there: a rollback, after a BEGIN that failed too.
      if (!closed) {
        closed = true;
        await this.call({ op: 'rollback', tx: id }).catch(() => {});
      }
      // A BEGIN that failed is why its statements failed: that is the error to report.
      await begun;
      throw err;
    }
    if (!closed) {
      closed = true;
      await this.call({ op: 'commit', tx: id });
    }
    return result;
  }

  async close(): Promise<void> {
    if (this.dead) return;
    this.closing = true;
    await this.call({ op: 'close' });
    this.dead = new Error("the embedded database's thread stopped: the database was closed");
    await this.worker.terminate();
  }
}

/** The type ids whose text is kept as it is: drizzle reads dates, intervals and some arrays so. */
function rawTypes(parsers: QueryOptions['parsers']): number[] {
  if (!parsers) return [];
  return Object.entries(parsers).map(([oid, parse]) => {
    // Only parsers that keep the text can run on the other side of a thread.
    if (parse('2000-01-01 00:00:00', Number(oid)) !== '2000-01-01 00:00:00') throw new Error(`type parser for ${oid} does not keep the text`);
    return Number(oid);
  });
}

/** A value as it crosses to the thread: what structured cloning would change is sent as text. */
function cloneable(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof Date || ArrayBuffer.isView(value)) return value;
  if (Array.isArray(value)) return value.map(cloneable);
  const proto = Object.getPrototypeOf(value);
  if (proto === Object.prototype || proto === null) return value;
  return String(value);
}

function rebuild(fields: Record<string, unknown>): ThreadDatabaseError {
  const err = new ThreadDatabaseError(String(fields.message));
  for (const [k, v] of Object.entries(fields)) if (k !== 'message' && k !== 'stack') err[k] = v;
  return err;
}
