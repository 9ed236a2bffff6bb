/**
 * A PostgreSQL URL that may name several hosts, as libpq takes it:
 * `postgres://user:pass@host1:5432,host2:5432/db?target_session_attrs=read-write`. Which of the
 * hosts a connection goes to is decided when it connects (lib/db/hosts.ts), so the service
 * follows a failover without a proxy in front of PostgreSQL.
 */

/** What a host must be for a connection to be kept (libpq's `target_session_attrs`). */
export type TargetSessionAttrs = 'any' | 'read-write' | 'read-only' | 'primary' | 'standby' | 'prefer-standby';
export const TARGET_SESSION_ATTRS: readonly TargetSessionAttrs[] = ['any', 'read-write', 'read-only', 'primary', 'standby', 'prefer-standby'];

export type HostPort = { host: string; port: number };

export type PostgresUrl = {
  hosts: HostPort[];
  attrs: TargetSessionAttrs;
  /** The same URL naming only `hosts[0]` and without `target_session_attrs`: what a driver given one host at a time takes. */
  singleHostUrl: string;
};

const DEFAULT_PORT = 5432;

export class PostgresUrlError extends Error {}

/** Parses a postgres:// or postgresql:// URL with one or more hosts; throws PostgresUrlError saying what is wrong. */
export function parsePostgresUrl(url: string): PostgresUrl {
  const m = /^(postgres(?:ql)?:\/\/)([^/?#]*)(.*)$/i.exec(url.trim());
  if (!m) throw new PostgresUrlError('is not a postgres:// or postgresql:// URL');
  const [, scheme, authority, rest] = m;
  // A password may hold an unencoded @: the host list starts after the last one.
  const at = authority.lastIndexOf('@');
  const userinfo = at >= 0 ? authority.slice(0, at + 1) : '';
  const hostList = at >= 0 ? authority.slice(at + 1) : authority;
  const hosts = hostList.split(',').map((h, i) => parseHost(h, i + 1));
  if (hosts.length > 16) throw new PostgresUrlError('names more than 16 hosts');
  // Everything but the host list, checked by the platform's own URL parser.
  let parsed: URL;
  try {
    parsed = new URL(`${scheme}${userinfo}${formatHost(hosts[0])}${rest}`);
  } catch {
    throw new PostgresUrlError('is not a valid URL');
  }
  const raw = parsed.searchParams.get('target_session_attrs') ?? 'any';
  if (!(TARGET_SESSION_ATTRS as readonly string[]).includes(raw)) {
    throw new PostgresUrlError(`has target_session_attrs=${raw}; it takes ${TARGET_SESSION_ATTRS.join(', ')}`);
  }
  const query = rest.replace(/([?&])target_session_attrs=[^&#]*(&?)/, (_, lead: string, trail: string) => (trail ? lead : '')).replace(/[?&]$/, '');
  return { hosts, attrs: raw as TargetSessionAttrs, singleHostUrl: `${scheme}${userinfo}${formatHost(hosts[0])}${query}` };
}

/** Errors name a host by its place in the list, never by its text (a malformed URL may have a password there). */
function parseHost(text: string, n: number): HostPort {
  const t = text.trim();
  const v6 = /^\[([0-9a-f:.]+)\](?::(\d+))?$/i.exec(t);
  const plain = /^([^:[\]\s]+)(?::(\d+))?$/.exec(t);
  const found = v6 ?? plain;
  if (!found) throw new PostgresUrlError(t ? `has a host (number ${n} in its list) that is not host or host:port` : `has an empty host (number ${n} in its list)`);
  const port = found[2] === undefined ? DEFAULT_PORT : Number(found[2]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new PostgresUrlError(`has a port out of range (host number ${n} in its list)`);
  return { host: found[1], port };
}

function formatHost(h: HostPort): string {
  return `${h.host.includes(':') ? `[${h.host}]` : h.host}:${h.port}`;
}

/** `host:port, host:port`: how logs and answers name hosts (never with credentials). */
export function describeHost(h: HostPort): string {
  return formatHost(h);
}

/** True for a URL the driver cannot be given as it is: several hosts, or a session requirement to check. */
export function needsHostChoice(url: PostgresUrl): boolean {
  return url.hosts.length > 1 || url.attrs !== 'any';
}
