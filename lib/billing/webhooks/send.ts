import http from 'node:http';
import https from 'node:https';
import { isIP, type Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import {
  bareHost,
  DestinationNotAllowed,
  guardedLookup,
  literalHostProblem,
  privateDestinationsAllowed,
  defaultResolver,
  type Resolver,
} from '../../net/destinations';
import { testRunnerOnly } from '../../env';

/**
 * What a failed attempt records, and all it records: never a raw network error, an address or a
 * header of the answer (those would make the sender a port scanner for whoever reads the logs).
 */
export const SEND_ERRORS = ['timeout', 'connection_failed', 'dns_failed', 'tls_failed', 'destination_not_allowed'] as const;
export type SendError = (typeof SEND_ERRORS)[number];

export type SendResult = { status: number; error: null } | { status: null; error: SendError };

// Sockets are kept for the next send to the same receiver, but not past the 5 s idle timeout
// of common servers, after which a reused socket could be closed under the request.
const FREE_SOCKET_MS = 4_000;
// What is read of an answer's body before the socket is given up instead of reused, and for how
// long: a receiver that trickles its body would otherwise hold a socket that no send limit counts
// (the attempt's slot is free once the status came).
const MAX_DRAIN_BYTES = 64 * 1024;
export const MAX_DRAIN_MS = 1_000;

type Agents = { http: http.Agent; https: https.Agent };
const state = ((globalThis as { __billingWebhookSend?: { resolver: Resolver; agents: Map<string, Agents> } }).__billingWebhookSend ??= {
  resolver: defaultResolver,
  agents: new Map(),
});

/**
 * The agents sends go through, with the guarded lookup. One pair per policy, so a socket opened
 * while private destinations were allowed is never reused once they are not.
 */
function agentsFor(allowPrivate: boolean): Agents {
  const key = allowPrivate ? 'private' : 'public';
  let agents = state.agents.get(key);
  if (!agents) {
    const options = { keepAlive: true, timeout: FREE_SOCKET_MS, lookup: guardedLookup(state.resolver) };
    agents = { http: new http.Agent(options), https: new https.Agent(options) };
    state.agents.set(key, agents);
  }
  return agents;
}

/** Replaces name resolution for sends (tests answer chosen addresses without touching DNS); returns the undo. */
export function useResolver(resolver: Resolver): () => void {
  const previous = state.resolver;
  const swap = (next: Resolver) => {
    for (const agents of state.agents.values()) {
      agents.http.destroy();
      agents.https.destroy();
    }
    state.agents.clear();
    state.resolver = next;
  };
  swap(resolver);
  return () => swap(previous);
}

/** Tests only: the system's name resolution again, and no socket kept (a new process's sends). */
export function resetSendsForTests(): void {
  testRunnerOnly('resetSendsForTests');
  useResolver(defaultResolver);
}

function dnsFailure(err: NodeJS.ErrnoException): boolean {
  // getaddrinfo's, or a DNS query's (queryA, queryAaaa: timeouts, refusals, server failures).
  return err.syscall === 'getaddrinfo' || /^query/.test(err.syscall ?? '') || err.code === 'ENOTFOUND' || /^EAI_/.test(err.code ?? '');
}

/**
 * POSTs once, redirects never followed: a 3xx is just its status. The whole attempt (lookup,
 * connect, TLS, answer headers) has `timeoutMs`. Never throws.
 */
export function postWebhook(target: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<SendResult> {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return Promise.resolve({ status: null, error: 'connection_failed' });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return Promise.resolve({ status: null, error: 'connection_failed' });
  // Literal addresses never reach the lookup, so they are judged here (the stored url may predate the rule).
  if (literalHostProblem(url)) return Promise.resolve({ status: null, error: 'destination_not_allowed' });
  const secure = url.protocol === 'https:';
  const agents = agentsFor(privateDestinationsAllowed());
  const host = bareHost(url.hostname);

  let req: http.ClientRequest;
  try {
    req = (secure ? https : http).request({
      protocol: url.protocol,
      host,
      port: url.port || (secure ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      agent: secure ? agents.https : agents.http,
      ...(secure && !isIP(host) && { servername: host }),
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
    });
  } catch {
    return Promise.resolve({ status: null, error: 'connection_failed' });
  }

  // The request's events all come later, so every listener is in place before the first.
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    let connected = false;
    let secured = false;
    const finish = (r: SendResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };
    const timer = setTimeout(() => {
      finish({ status: null, error: 'timeout' });
      req.destroy();
    }, timeoutMs);
    req.on('socket', (socket: Socket) => {
      // A reused socket is past its handshake already.
      if (!socket.connecting) {
        connected = true;
        secured = true;
        return;
      }
      socket.once('connect', () => (connected = true));
      (socket as TLSSocket).once('secureConnect', () => (secured = true));
    });
    req.on('response', (res) => {
      finish({ status: res.statusCode ?? 0, error: null });
      // The answer's body is not read, only drained so the socket can serve the next send.
      let read = 0;
      const giveUp = setTimeout(() => res.destroy(), Math.min(timeoutMs, MAX_DRAIN_MS));
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_DRAIN_BYTES) res.destroy();
      });
      res.on('close', () => clearTimeout(giveUp));
      res.on('error', () => {});
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err instanceof DestinationNotAllowed) return finish({ status: null, error: 'destination_not_allowed' });
      if (dnsFailure(err)) return finish({ status: null, error: 'dns_failed' });
      if (secure && connected && !secured) return finish({ status: null, error: 'tls_failed' });
      finish({ status: null, error: 'connection_failed' });
    });
    req.end(body);
  });
}
