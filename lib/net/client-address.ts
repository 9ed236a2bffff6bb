import net from 'node:net';

/**
 * The client's network address, for per-address limits (unauthenticated API calls, console
 * sign-in attempts), or null when there is no usable one.
 *
 * Route handlers do not see the connection, only headers. The production server
 * (scripts/serve.mjs) writes the address it vouches for into `X-Forwarded-For` before Next.js
 * sees the request: the connection's peer, or behind `TRUSTED_PROXIES` proxies the entry the
 * outermost one appended. Under `next start` alone Next.js sets the peer only when the request
 * has no such header, and a proxy in front appends the address that connected to it: the last
 * entry is then the one written by the hop next to the service, and entries to its left are
 * ignored.
 *
 * IPv6 addresses are taken by their /64 network: one subscriber usually holds a whole /64.
 */
export function clientAddress(headers: Headers | Record<string, string | string[] | undefined>): string | null {
  const raw = headers instanceof Headers ? headers.get('x-forwarded-for') : headers['x-forwarded-for'];
  const value = Array.isArray(raw) ? raw.join(',') : raw;
  const last = value?.split(',').pop()?.trim();
  if (!last) return null;
  // Some proxies write a port ([v6]:port, v4:port) or a zone (fe80::1%eth0): neither names the client.
  let address = last.replace(/^\[(.*)\](:\d+)?$/, '$1').replace(/%.*$/, '');
  if (net.isIPv4(address.replace(/:\d+$/, ''))) address = address.replace(/:\d+$/, '');
  address = address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
  if (net.isIPv4(address)) return address;
  if (net.isIPv6(address)) return `${network64(address)}::/64`;
  return null;
}

/**
 * The wider network an address from clientAddress belongs to, for a budget of its own beside the
 * address's: an IPv6 /64's /48 (a site: a subscriber is often given a /56 or a /48, that is 256
 * or 65,536 /64s, each of which would otherwise count as a client of its own). Null for IPv4,
 * where one address is already what a subscriber has.
 */
export function clientNetwork(address: string): string | null {
  const m = /^([0-9a-f]+:[0-9a-f]+:[0-9a-f]+):[0-9a-f]+::\/64$/.exec(address);
  return m ? `${m[1]}::/48` : null;
}

/** The first four groups of an IPv6 address, written out (`2001:db8::1` → `2001:db8:0:0`). */
function network64(address: string): string {
  const [head, tail] = address.toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  // An embedded IPv4 tail takes two groups; it never reaches the first four.
  const width = right.some((g) => g.includes('.')) ? right.length + 1 : right.length;
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - width).fill('0'), ...right];
  return groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':');
}
