import dns from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { setting } from '../env';

/**
 * Where the service may send requests chosen by its users (webhook URLs). Everything inside the
 * network (loopback, private, link-local with the cloud metadata address, CGNAT, unique-local,
 * multicast, unspecified and the other ranges IANA marks as not globally reachable) is refused
 * unless WEBHOOK_ALLOW_PRIVATE=1, so an API key cannot turn the sender into a proxy or a port
 * scanner for the service's own network.
 */
export function privateDestinationsAllowed(): boolean {
  return setting('WEBHOOK_ALLOW_PRIVATE');
}

// IPv4 ranges that are not globally reachable (RFC 6890 and the IANA special-purpose registry).
const IPV4_BLOCKED: [string, number][] = [
  ['0.0.0.0', 8], // "this network", with the unspecified address
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // CGNAT shared space
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // former 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, with the broadcast address
];

function ipv4Number(address: string): number {
  return address.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

const ipv4Ranges = IPV4_BLOCKED.map(([base, bits]) => {
  const size = 2 ** (32 - bits);
  const start = ipv4Number(base);
  return { start, end: start + size - 1 };
});

function publicIpv4(n: number): boolean {
  return !ipv4Ranges.some((r) => n >= r.start && n <= r.end);
}

/** The eight 16-bit groups of an IPv6 address (zone id dropped, embedded dotted quad allowed). */
function ipv6Groups(address: string): number[] {
  let text = address.replace(/%.*$/, '');
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (quad) {
    const n = ipv4Number(quad[1]);
    text = `${text.slice(0, -quad[1].length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (s: string) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  return [...left, ...Array(8 - left.length - right.length).fill(0), ...right];
}

/**
 * IPv6: only global unicast (2000::/3) outside its documentation and protocol-assignment blocks.
 * Forms that carry an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4
 * `2002::/16`) are judged by that IPv4 address, since that is where the packets go.
 */
function publicIpv6(address: string): boolean {
  const g = ipv6Groups(address);
  const embedded = (hi: number, lo: number) => publicIpv4(hi * 65536 + lo);
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return embedded(g[6], g[7]);
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return embedded(g[6], g[7]);
  if ((g[0] & 0xe000) !== 0x2000) return false; // ::, ::1, fc00::/7, fe80::/10, ff00::/8, 100::/64, 64:ff9b:1::/48, ...
  if (g[0] === 0x2002) return embedded(g[1], g[2]);
  if (g[0] === 0x2001 && g[1] < 0x200) return false; // protocol assignments: Teredo, benchmarking, ORCHID
  if (g[0] === 0x2001 && g[1] === 0xdb8) return false; // documentation
  if (g[0] === 0x3fff && g[1] < 0x1000) return false; // documentation
  return true;
}

/** Whether an IP address (v4 or v6, as text) is a public one. Anything that is not an address is not. */
export function isPublicAddress(address: string): boolean {
  const kind = isIP(address.replace(/%.*$/, ''));
  if (kind === 4) return publicIpv4(ipv4Number(address));
  if (kind === 6) return publicIpv6(address);
  return false;
}

/** A URL host (`URL.hostname`, IPv6 in brackets) without its brackets. */
export function bareHost(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

/**
 * Why a URL's host is refused before any lookup, or null. Literal addresses are judged here
 * (`new URL` has already turned `2130706433`, `0x7f.1`, `0177.0.0.1` and `127.1` into dotted
 * quads, and IPv6 into its short form), and so are `localhost` names, which always mean this
 * machine. Every other name is judged at connect time, on the addresses it resolves to.
 */
export function literalHostProblem(url: URL): string | null {
  if (privateDestinationsAllowed()) return null;
  const host = bareHost(url.hostname).toLowerCase().replace(/\.$/, '');
  if (isIP(host)) return isPublicAddress(host) ? null : 'must not point to a loopback, private, link-local or other non-public address';
  if (host === 'localhost' || host.endsWith('.localhost')) return 'must not point to this machine (localhost)';
  return null;
}

/** Thrown when a destination is refused; the attempt is logged as `destination_not_allowed`. */
export class DestinationNotAllowed extends Error {
  readonly code = 'EDESTINATIONNOTALLOWED';
  constructor() {
    super('destination not allowed');
  }
}

export type ResolvedAddress = { address: string; family: number };
/** Answers every address of a name (like `dns.lookup` with `all: true`). */
export type Resolver = (hostname: string, family: number | undefined) => Promise<ResolvedAddress[]>;

/** The operating system's lookup (getaddrinfo: the hosts file, then DNS), on libuv's thread pool. */
export const systemResolver: Resolver = (hostname, family) => dns.promises.lookup(hostname, { all: true, family: family ?? 0 });

// A DNS query waits this long for its answer, and is sent this many times, before the name counts
// as not resolving: 4 s at most, inside the 10 s a send has.
const DNS_TIMEOUT_MS = 2_000;
const DNS_TRIES = 2;
// Lookups through the operating system at once. getaddrinfo runs on libuv's pool of four threads,
// which password hashing and file work share, and cannot be cancelled: names whose DNS servers
// never answer would hold every thread for as long as the system resolver waits.
const MAX_SYSTEM_LOOKUPS = 2;
const systemLookups = { running: 0, waiting: [] as (() => void)[] };

async function limitedSystemLookup(hostname: string, family: number | undefined): Promise<ResolvedAddress[]> {
  if (systemLookups.running >= MAX_SYSTEM_LOOKUPS) await new Promise<void>((resolve) => systemLookups.waiting.push(resolve));
  systemLookups.running++;
  try {
    return await systemResolver(hostname, family);
  } finally {
    systemLookups.running--;
    systemLookups.waiting.shift()?.();
  }
}

/**
 * How sends resolve names: DNS queries made by the process itself (c-ares: no thread held while
 * a server is slow, and a timeout of their own), both address families at once. A name DNS does
 * not answer for at once (no such name, a refusal) goes on to the operating system's lookup, for
 * the hosts file, at most MAX_SYSTEM_LOOKUPS at a time, as do localhost names; one whose servers
 * do not answer in time fails. `servers` (host:port) replaces the system's DNS servers.
 */
export function dnsResolver(opts: { servers?: string[]; timeoutMs?: number; tries?: number } = {}): Resolver {
  return async (hostname, family) => {
    // Always this machine, and answered by the hosts file.
    const name = hostname.toLowerCase().replace(/\.$/, '');
    if (name === 'localhost' || name.endsWith('.localhost')) return limitedSystemLookup(hostname, family);
    const resolver = new dns.promises.Resolver({ timeout: opts.timeoutMs ?? DNS_TIMEOUT_MS, tries: opts.tries ?? DNS_TRIES });
    if (opts.servers) resolver.setServers(opts.servers);
    const [v4, v6] = await Promise.allSettled([family === 6 ? [] : resolver.resolve4(hostname), family === 4 ? [] : resolver.resolve6(hostname)]);
    const found = [
      ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
    ];
    if (found.length) return found;
    const failures = [v4, v6].flatMap((r) => (r.status === 'rejected' ? [r.reason as NodeJS.ErrnoException] : []));
    // The servers did not answer in time: the system's lookup would only wait for them again, on a pool thread.
    const unanswered = failures.find((e) => e.code === dns.TIMEOUT);
    if (unanswered) throw unanswered;
    // No such name in DNS, or DNS refused or failed at once: the hosts file may know it.
    return limitedSystemLookup(hostname, family);
  };
}

export const defaultResolver: Resolver = dnsResolver();

/**
 * A `lookup` for sockets: resolves the name, then refuses the connection when any address it
 * got is not public. The socket connects only to the addresses checked here, so a name that
 * answers a public address to one query and a private one to the next (DNS rebinding) gains
 * nothing.
 */
export function guardedLookup(resolve: Resolver): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, options.family === 4 || options.family === 6 ? options.family : undefined).then(
      (addresses) => {
        if (!addresses.length) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '', 4);
        if (!privateDestinationsAllowed() && addresses.some((a) => !isPublicAddress(a.address))) return callback(new DestinationNotAllowed(), '', 4);
        if (options.all) return (callback as unknown as (err: null, all: ResolvedAddress[]) => void)(null, addresses);
        callback(null, addresses[0].address, addresses[0].family);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 4),
    );
  };
}
