import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * What a drain needs to know of each open connection: whether a request is under way on it (and
 * its answer, not yet sent), and whether it has sent anything since its last answer. A connection that has sent nothing yet is
 * on its way to its first request (the client connected, its request is on the wire): closing it
 * would cut off a request the client already sent, so a drain waits for it instead.
 */
export type ConnectionState = { active: number; served: number; readAtRest: number; responses: Set<ServerResponse> };

// Kept on the server under a registered symbol, so the launcher (scripts/serve.mjs, through its
// bundle) and the application (lib/shutdown.ts) share one record of the same server.
const KEY = Symbol.for('billing.http.connections');

type Tracked = Server & { [KEY]?: Map<Socket, ConnectionState> };

/** Starts recording the server's connections (once per server) and returns the record. */
export function trackConnections(server: Server): Map<Socket, ConnectionState> {
  const tracked = server as Tracked;
  const existing = tracked[KEY];
  if (existing) return existing;
  const connections = new Map<Socket, ConnectionState>();
  tracked[KEY] = connections;
  server.on('connection', (socket: Socket) => {
    connections.set(socket, { active: 0, served: 0, readAtRest: 0, responses: new Set() });
    socket.once('close', () => connections.delete(socket));
  });
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    const state = connections.get(req.socket);
    if (!state) return;
    state.active++;
    state.responses.add(res);
    res.once('close', () => {
      state.active--;
      state.responses.delete(res);
      state.served++;
      state.readAtRest = req.socket.bytesRead;
    });
  });
  return connections;
}

/** The server's recorded connections, or null when nobody records them. */
export function trackedConnections(server: Server): Map<Socket, ConnectionState> | null {
  return (server as Tracked)[KEY] ?? null;
}

/**
 * Whether a connection is idle between requests: it was answered at least once, nothing is under
 * way on it, nothing has arrived since its last answer and nothing of that answer is still
 * waiting to be written. Closing it loses nothing (a client sending on it at that very moment
 * sees its request refused the way any keep-alive client must expect).
 */
export function isIdleBetweenRequests(socket: Socket, state: ConnectionState): boolean {
  return state.served > 0 && state.active === 0 && socket.bytesRead === state.readAtRest && socket.writableLength === 0;
}
