// The embedded database's own thread: PGlite runs here, so the server's JavaScript thread
// parses requests and renders answers while a statement runs. lib/db/pglite-thread.ts is the
// other end; it sends one message per statement and gets back rows, or the error's fields.
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite, parse, protocol, types } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';

const port = parentPort;
if (!port) throw new Error('scripts/pglite-thread.mjs runs as a worker thread of lib/db/pglite-thread.ts');

// PGlite's WebAssembly, compiled once by the process that starts the thread (lib/db/pglite-thread.ts):
// each thread compiling it again cost every open a compile, and the compiled code's tier-up.
const options = { extensions: { pg_trgm }, ...(workerData.pgliteWasmModule && { pgliteWasmModule: workerData.pgliteWasmModule }) };
const db = workerData.dataDir ? new PGlite(workerData.dataDir, options) : new PGlite(options);

/** Open transactions by id: PGlite's own transaction, held open until the other end ends it. */
const open = new Map();
/** Thrown into a transaction the other end rolls back. */
const rollback = Symbol('rollback');
const keep = (value) => value;

function errorFields(err) {
  const fields = { message: String(err?.message ?? err), name: err?.name ?? 'Error' };
  if (err && typeof err === 'object') {
    for (const [k, v] of Object.entries(err)) if (v === null || ['string', 'number', 'boolean'].includes(typeof v)) fields[k] = v;
  }
  return fields;
}

const answer = (id, result) => port.postMessage({ id, result });
const fail = (id, err) => port.postMessage({ id, error: errorFields(err) });

/**
 * Statements by text, prepared once under a name: PostgreSQL parses each once, and plans it once
 * its generic plan serves (PGlite's own query() parses and plans every call, which cost the
 * one-statement event path more than running it: bench/README.md). Bounded: past the bound a
 * statement runs unnamed, as in PGlite.
 */
const statements = new Map();
const MAX_STATEMENTS = 1000;
let named = 0;
const { serialize } = protocol;

/**
 * PGlite's type parsers with the caller's raw types kept as text, built once per set of types.
 * PGlite's query() merged them on every call: a copy of its 300-odd parsers, which cost more than
 * a one-row statement itself. PGlite fills its parsers as the database opens; no statement runs
 * before that.
 */
const parsersByRaw = new Map();
function parsersFor(raw) {
  const k = raw.join(',');
  let parsers = parsersByRaw.get(k);
  if (!parsers) {
    parsers = { ...db.parsers };
    for (const oid of raw) parsers[oid] = keep;
    parsersByRaw.set(k, parsers);
  }
  return parsers;
}

/**
 * A statement through the extended protocol, as PGlite's query() runs it, in at most two calls
 * into PostgreSQL: Parse and Describe (skipped once a named statement is known), then Bind,
 * Describe, Execute and Sync. With `prepare`, the statement is kept under a name; without, it is
 * the unnamed statement, parsed and planned for this call's values.
 */
async function runStatement(m, inTransaction, prepare) {
  await db._checkReady();
  const run = () =>
    db._runExclusiveQuery(async () => {
      let known = prepare ? statements.get(m.text) : undefined;
      let result;
      let synced = false;
      try {
        if (!known) {
          const name = prepare ? `s${++named}` : '';
          const described = await db.execProtocolStream(concat([serialize.parse({ name, text: m.text, types: [] }), serialize.describe({ type: 'S', name })]), { syncToFs: false });
          known = { name, types: parse.parseDescribeStatementResults(described) };
          if (prepare) statements.set(m.text, known);
        }
        const values = m.params.map((v, i) => {
          if (v === null || v === undefined) return null;
          const serializer = db.serializers[known.types[i]];
          return serializer ? serializer(v) : v.toString();
        });
        // Bind, Describe, Execute and Sync in one call into PostgreSQL: after an error it skips
        // to the Sync, so the session is ready for the next statement either way.
        const messages = [serialize.bind({ statement: known.name, values }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()];
        synced = true;
        // PostgreSQL's answer as it wrote it (views into its memory, copied at once), read below.
        const chunks = [];
        await db.execProtocolRawStream(concat(messages), { syncToFs: false, onRawData: (chunk) => chunks.push(chunk.slice()) });
        result = readAnswer(chunks.length === 1 ? chunks[0] : concat(chunks), parsersFor(m.raw), m.rowMode);
      } catch (err) {
        if (!synced) await db.execProtocolStream(serialize.sync(), { syncToFs: false });
        throw err;
      }
      if (!inTransaction) await db.syncToFs();
      return result;
    });
  return inTransaction ? run() : db._runExclusiveTransaction(run);
}

/**
 * One statement's answer (RowDescription, DataRows, CommandComplete; or an ErrorResponse), read
 * from the protocol's bytes into what PGlite's query() returns: rows, fields, affectedRows.
 * PGlite's own reader copied every non-null value into a buffer of its own before decoding it,
 * about 2 µs a value: a fifth of a 1000-row statement's time. An answer with an error is read
 * by PGlite's reader, so the error thrown is the one PGlite throws.
 */
function readAnswer(bytes, parsers, rowMode) {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let fields = [];
  let read = [];
  const rows = [];
  let done = null;
  for (let at = 0; at < buf.length; ) {
    const type = buf[at];
    const end = at + 1 + buf.readInt32BE(at + 1);
    let p = at + 5;
    if (type === 0x45) throw databaseError(bytes);
    // After its CommandComplete only an error matters (a deferred constraint fails at the Sync).
    if (done) {
      at = end;
      continue;
    }
    if (type === 0x54) {
      // RowDescription: name, table, column, type, size, modifier, format.
      const n = buf.readInt16BE(p);
      p += 2;
      fields = [];
      for (let i = 0; i < n; i++) {
        const nul = buf.indexOf(0, p);
        const name = text(buf, p, nul);
        p = nul + 1;
        fields.push({ name, dataTypeID: buf.readInt32BE(p + 6) });
        p += 18;
      }
      read = fields.map((f) => parsers[f.dataTypeID] ?? types.parsers[f.dataTypeID] ?? null);
    } else if (type === 0x44) {
      const n = buf.readInt16BE(p);
      p += 2;
      const row = rowMode === 'array' ? new Array(n) : {};
      for (let i = 0; i < n; i++) {
        const len = buf.readInt32BE(p);
        p += 4;
        let value = null;
        if (len >= 0) {
          value = text(buf, p, p + len);
          p += len;
          if (read[i]) value = read[i](value, fields[i].dataTypeID);
        }
        if (rowMode === 'array') row[i] = value;
        // A column named __proto__ is a column, as in PGlite's rows, not the row's prototype.
        else if (fields[i].name === '__proto__') Object.defineProperty(row, '__proto__', { value, enumerable: true, writable: true, configurable: true });
        else row[fields[i].name] = value;
      }
      rows.push(row);
    } else if (type === 0x43) {
      // CommandComplete: "INSERT 0 3", "UPDATE 2", "SELECT 5"...
      const tag = buf.toString('utf8', p, end - 1).split(' ');
      const count = parseInt(tag[tag.length - 1], 10);
      const writes = ['INSERT', 'UPDATE', 'DELETE', 'COPY', 'MERGE'].includes(tag[0]);
      done = { rows, fields, affectedRows: writes && !Number.isNaN(count) ? count : 0 };
    }
    at = end;
  }
  // As PGlite: no CommandComplete (an empty statement) is no rows.
  return done ?? { rows: [], fields: [], affectedRows: 0 };
}

/** UTF-8 text as PGlite's TextDecoder reads it: a leading byte order mark is dropped. */
function text(buf, start, end) {
  if (end - start >= 3 && buf[start] === 0xef && buf[start + 1] === 0xbb && buf[start + 2] === 0xbf) start += 3;
  return buf.toString('utf8', start, end);
}

/** The error of an answer, as PGlite's reader makes it (code, constraint, detail...). */
function databaseError(bytes) {
  let error = null;
  new protocol.Parser().parse(bytes, (message) => {
    if (message.name === 'error' && !error) error = message;
  });
  return error ?? new Error('the database answered with an error it did not describe');
}

function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * Each open transaction's work, in the order its messages came. The other end sends a
 * transaction's first statement without waiting for its BEGIN to be answered, and may send its
 * end while a statement is on its way: each statement, commit or rollback of a transaction starts
 * once the one before it (the BEGIN first) has finished, as on a connection of its own.
 */
const chains = new Map();

/**
 * Who runs a statement: the open transaction it belongs to, or the database. A statement outside
 * any transaction is handed to PGlite at once, in the order the messages came.
 */
function runner(m) {
  if (m.tx === undefined) return db;
  const t = open.get(m.tx);
  if (!t) throw new Error(`transaction ${m.tx} is not open`);
  return t.tx;
}

async function handle(m) {
  switch (m.op) {
    case 'ready':
      await db.waitReady;
      return null;
    case 'query': {
      const target = runner(m);
      // A statement over arrays (a batch's unnest) is planned for each call's sizes: a generic
      // plan, which assumes ten elements, made a 1000-event batch several times slower. Its
      // arrays come as arrays or as array literals cast in the text (textArray in lib/db/statements.ts).
      // One without parameters (a migration's DDL, a fixed check) is not worth a name.
      const overArrays = m.params.some(Array.isArray) || m.text.includes('::text[]');
      const prepare = m.params.length > 0 && !overArrays && (statements.has(m.text) || statements.size < MAX_STATEMENTS);
      const r = await runStatement(m, target !== db, prepare);
      return { rows: r.rows, fields: r.fields, affectedRows: r.affectedRows };
    }
    case 'exec':
      return (await runner(m).exec(m.text)).map((r) => ({ rows: r.rows, fields: r.fields, affectedRows: r.affectedRows }));
    case 'begin': {
      const begun = new Promise((resolve, reject) => {
        let started = false;
        const done = db.transaction(
          (tx) =>
            new Promise((commit, abort) => {
              started = true;
              open.set(m.tx, { tx, commit, abort, done });
              resolve(null);
            }),
        );
        // A BEGIN that failed answers the begin; a commit or rollback answers for itself.
        done.catch((err) => {
          if (!started) reject(err);
        });
      });
      return begun;
    }
    case 'commit':
    case 'rollback': {
      const t = open.get(m.tx);
      if (!t) throw new Error(`transaction ${m.tx} is not open`);
      open.delete(m.tx);
      if (m.op === 'commit') {
        t.commit();
        await t.done;
      } else {
        t.abort(rollback);
        await t.done.catch((err) => {
          if (err !== rollback) throw err;
        });
      }
      return null;
    }
    case 'close':
      await db.close();
      return null;
    default:
      throw new Error(`unknown operation ${m.op}`);
  }
}

/** Runs a message's work: a transaction's after what it was sent before (see `chains`). */
function schedule(m) {
  if (m.tx === undefined) return handle(m);
  const work = m.op === 'begin' ? handle(m) : (chains.get(m.tx) ?? Promise.resolve()).then(() => handle(m));
  // Whether it worked or not, the transaction's next message goes on (a failed BEGIN leaves
  // nothing open: what follows it fails as not open).
  const tail = work.then(
    () => undefined,
    () => undefined,
  );
  chains.set(m.tx, tail);
  if (m.op === 'commit' || m.op === 'rollback') {
    tail.then(() => {
      if (chains.get(m.tx) === tail) chains.delete(m.tx);
    });
  }
  return work;
}

port.on('message', (m) => {
  schedule(m).then(
    (result) => {
      answer(m.id, result);
      if (m.op === 'close') port.close();
    },
    (err) => fail(m.id, err),
  );
});
