import dgram from 'node:dgram';
import { pbkdf2 } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dnsResolver } from './destinations';

/** The name a DNS query asks for, its type, and the question's end. */
function question(msg: Buffer): { name: string; type: number; end: number } {
  const labels: string[] = [];
  let i = 12;
  while (msg[i] !== 0) {
    labels.push(msg.subarray(i + 1, i + 1 + msg[i]).toString('ascii'));
    i += msg[i] + 1;
  }
  return { name: labels.join('.').toLowerCase(), type: msg.readUInt16BE(i + 1), end: i + 5 };
}

/** A DNS server on 127.0.0.1: A and AAAA answers from `zone`, NXDOMAIN for other names; `silent` never answers. */
async function fakeDns(zone: Record<string, { a?: string[]; aaaa?: string[] }>, silent = false) {
  const socket = dgram.createSocket('udp4');
  let queries = 0;
  socket.on('message', (msg, from) => {
    queries++;
    if (silent) return;
    const q = question(msg);
    const entry = zone[q.name];
    const addresses = q.type === 1 ? (entry?.a ?? []) : q.type === 28 ? (entry?.aaaa ?? []) : [];
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2);
    header.writeUInt16BE(entry ? 0x8180 : 0x8183, 2); // a response, recursion available; NOERROR or NXDOMAIN
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(addresses.length, 6);
    const answers = addresses.map((address) => {
      const rdata = q.type === 1 ? Buffer.from(address.split('.').map(Number)) : Buffer.from(expand6(address), 'hex');
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
      rr.writeUInt16BE(q.type, 2);
      rr.writeUInt16BE(1, 4);
      rr.writeUInt32BE(60, 6);
      rr.writeUInt16BE(rdata.length, 10);
      return Buffer.concat([rr, rdata]);
    });
    socket.send(Buffer.concat([header, msg.subarray(12, q.end), ...answers]), from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { server: `127.0.0.1:${socket.address().port}`, queries: () => queries, close: () => new Promise<void>((r) => socket.close(() => r())) };
}

function expand6(address: string): string {
  const [head, tail = ''] = address.split('::');
  const parts = (s: string) => (s ? s.split(':') : []);
  const groups = [...parts(head), ...Array(8 - parts(head).length - parts(tail).length).fill('0'), ...parts(tail)];
  return groups.map((g) => g.padStart(4, '0')).join('');
}

describe('resolving webhook hosts', () => {
  let answering: Awaited<ReturnType<typeof fakeDns>>;
  let silent: Awaited<ReturnType<typeof fakeDns>>;
  beforeAll(async () => {
    answering = await fakeDns({ 'hooks.example.test': { a: ['93.184.216.34'], aaaa: ['2606:2800:220:1::248'] }, 'v4only.example.test': { a: ['198.51.100.7'] } });
    silent = await fakeDns({}, true);
  });
  afterAll(async () => {
    await answering?.close();
    await silent?.close();
  });

  it('asks DNS for both address families itself, and answers what each has', async () => {
    const resolve = dnsResolver({ servers: [answering.server] });
    expect(await resolve('hooks.example.test', undefined)).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1::248', family: 6 },
    ]);
    expect(await resolve('hooks.example.test', 6)).toEqual([{ address: '2606:2800:220:1::248', family: 6 }]);
    expect(await resolve('v4only.example.test', undefined)).toEqual([{ address: '198.51.100.7', family: 4 }]);
  });

  it('answers localhost names from the hosts file, without asking DNS', async () => {
    const resolve = dnsResolver({ servers: [answering.server] });
    const before = answering.queries();
    expect(await resolve('localhost', 4)).toEqual([{ address: '127.0.0.1', family: 4 }]);
    expect(answering.queries()).toBe(before);
  });

  it('gives up on servers that never answer after its own timeout, without holding the thread pool meanwhile', async () => {
    const resolve = dnsResolver({ servers: [silent.server], timeoutMs: 300, tries: 1 });
    const started = Date.now();
    const lookups = Array.from({ length: 8 }, (_, i) => resolve(`tarpit-${i}.example.test`, undefined).catch((err: NodeJS.ErrnoException) => err));
    // Work that needs the pool (password hashing) goes on meanwhile.
    const hashed = await new Promise<number>((resolve, reject) => pbkdf2('pw', 'salt', 1, 32, 'sha256', (err) => (err ? reject(err) : resolve(Date.now() - started))));
    expect(hashed).toBeLessThan(250);
    const errors = await Promise.all(lookups);
    for (const err of errors) {
      expect(err).toBeInstanceOf(Error);
      expect((err as NodeJS.ErrnoException).code).toBe('ETIMEOUT');
      expect((err as NodeJS.ErrnoException).syscall).toMatch(/^query/);
    }
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(silent.queries()).toBeGreaterThanOrEqual(8);
  });
});
