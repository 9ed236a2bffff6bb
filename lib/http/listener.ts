import cluster from 'node:cluster';
import fs from 'node:fs';
import net from 'node:net';
import type { Server } from 'node:http';

/**
 * Closing a listening socket resets every connection the kernel has completed on it that the
 * process has not taken yet: their clients believe they are connected and may have sent their
 * request already, and under a steady stream of new connections that queue is never empty. The
 * listener is therefore closed at a moment when the queue holds nothing of a client's:
 *
 * 1. the backlog is cut to one connection (listen(2) again with a backlog of 0), so a full queue
 *    is one connection, and while it is full the kernel answers no new attempt (the client tries
 *    again a second later, by when the port is closed: a clean refusal);
 * 2. once the process has taken everything queued, it connects to itself (the "plug") and, before
 *    the event loop can take that connection, reads the kernel's table: when the one queued
 *    connection is the plug and no client is half-way through its handshake, nothing of a
 *    client's can be reset, and the listener closes (only the plug is reset);
 * 3. otherwise the plug is dropped and the attempt made again a millisecond later, for at most
 *    SETTLE_MS, after which the listener closes regardless.
 *
 * This reads Linux's /proc/net/tcp; elsewhere (or when the table cannot be read) the listener
 * closes at once, as before. http.Server#close is not used: it would also close every open
 * connection without a request under way, a connection whose first request is on its way included.
 */
const SETTLE_MS = 1_000;

/** TCP states in /proc/net/tcp. */
const ESTABLISHED = '01';
const SYN_RECV = '03';
const LISTEN = '0A';

type Row = { localPort: number; remotePort: number; state: string; rxQueue: number };

function tableFor(server: Server): { file: string; port: number; host: string } | null {
  const address = server.address();
  if (!address || typeof address === 'string') return null;
  const v6 = address.family === 'IPv6';
  const wildcard = address.address === '::' || address.address === '0.0.0.0';
  return { file: v6 ? '/proc/net/tcp6' : '/proc/net/tcp', port: address.port, host: wildcard ? (v6 ? '::1' : '127.0.0.1') : address.address };
}

/**
 * Rows of the kernel's table, from the top: listening sockets come first, so `head` stops at the
 * first row that is not one (reading the whole table takes milliseconds on a busy host).
 */
function readTable(file: string, head: boolean): Row[] | null {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return null;
  }
  const rows: Row[] = [];
  try {
    const chunk = Buffer.alloc(16 * 1024);
    let rest = '';
    let first = true;
    for (;;) {
      const n = fs.readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) return rows;
      const lines = (rest + chunk.toString('latin1', 0, n)).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        if (first) {
          first = false; // the header
          continue;
        }
        // sl local_address rem_address st tx_queue:rx_queue ...
        const [, local, remote, state, queues] = line.trim().split(/\s+/);
        if (head && state !== LISTEN) return rows;
        rows.push({ localPort: parseInt(local?.split(':')[1] ?? '', 16), remotePort: parseInt(remote?.split(':')[1] ?? '', 16), state, rxQueue: parseInt(queues?.split(':')[1] ?? '', 16) || 0 });
      }
    }
  } catch {
    return null;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * How many connections the kernel has completed on the server's listening socket that the
 * process has not taken yet (a listening socket's rx_queue), or null where that cannot be read.
 */
export function pendingAccepts(server: Server): number | null {
  const table = tableFor(server);
  const rows = table && readTable(table.file, true);
  if (!table || !rows) return null;
  const mine = rows.filter((r) => r.localPort === table.port);
  return mine.length ? mine.reduce((n, r) => n + r.rxQueue, 0) : null;
}

/** Closes the server's listening socket without resetting a client's connection (see above). */
export function stopListening(server: Server, onClosed: () => void): void {
  const table = tableFor(server);
  const close = () => {
    net.Server.prototype.close.call(server, onClosed);
  };
  const handle = (server as unknown as { _handle?: { listen?: (backlog: number) => number } })._handle;
  // A cluster worker's listener is the primary's (node:cluster hands it connections): nothing of its own to drain.
  if (cluster.isWorker || !table || typeof handle?.listen !== 'function' || pendingAccepts(server) === null) return close();
  handle.listen(0);
  const settleBy = Date.now() + SETTLE_MS;
  const attempt = () => {
    if (Date.now() >= settleBy) return close();
    if (pendingAccepts(server) !== 0) return void setTimeout(attempt, 1);
    const plug = net.connect({ port: table.port, host: table.host });
    plug.on('error', () => {});
    // net.connect issues connect(2) on the next tick; this runs right after it, before the event
    // loop turns and takes the plug's connection.
    process.nextTick(() => {
      const rows = readTable(table.file, false) ?? [];
      const listening = rows.filter((r) => r.state === LISTEN && r.localPort === table.port);
      const queued = listening.reduce((n, r) => n + r.rxQueue, 0);
      const plugged = rows.some((r) => r.state === ESTABLISHED && r.localPort === table.port && r.remotePort === plug.localPort);
      const halfOpen = rows.some((r) => r.state === SYN_RECV && r.localPort === table.port);
      if (queued === 1 && plugged && !halfOpen) {
        close();
        plug.destroy();
      } else {
        plug.destroy();
        setTimeout(attempt, 1);
      }
    });
  };
  // A turn of the event loop first, in which the connections queued until now are taken.
  setTimeout(attempt, 0);
}
