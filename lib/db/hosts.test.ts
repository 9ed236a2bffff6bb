import net from 'node:net';
import { afterAll, describe, expect, inject, it } from 'vitest';
import postgres from 'postgres';
import { captureLogs } from '../testing/log-capture';
import { parsePostgresUrl, type HostPort } from '../net/postgres-url';
import { HostSelector, type HostRole } from './hosts';
import { DatabaseUnavailableError, isDatabaseUnavailable } from './unavailable';

/** TCP listeners that stand in for PostgreSQL hosts: the selector only connects; `roles` says what each one "is". */
async function listeners(n: number) {
  const servers = await Promise.all(
    Array.from({ length: n }, () => new Promise<net.Server>((resolve) => {
      const s = net.createServer((c) => c.destroy());
      s.listen(0, '127.0.0.1', () => resolve(s));
    })),
  );
  return servers;
}

const portOf = (s: net.Server) => (s.address() as net.AddressInfo).port;

async function closedPort(): Promise<number> {
  const [s] = await listeners(1);
  const port = portOf(s);
  await new Promise((r) => s.close(r));
  return port;
}

describe('choosing among several hosts', () => {
  const open: net.Server[] = [];
  afterAll(() => {
    for (const s of open) s.close();
  });

  async function cluster(n: number) {
    const servers = await listeners(n);
    open.push(...servers);
    return servers.map(portOf);
  }

  function selectorFor(ports: number[], attrs: string, roles: Map<number, HostRole | 'down'>) {
    const url = parsePostgresUrl(`postgres://u@${ports.map((p) => `127.0.0.1:${p}`).join(',')}/db?target_session_attrs=${attrs}`);
    const asked: number[] = [];
    const ask = async (h: HostPort): Promise<HostRole> => {
      asked.push(h.port);
      const role = roles.get(h.port);
      if (!role || role === 'down') throw Object.assign(new Error('refused'), { code: 'ECONNREFUSED' });
      return role;
    };
    return { selector: new HostSelector(url, 'DATABASE_URL', ask, { waitMs: 300, roundPauseMs: 50, trustMs: 0, connectTimeoutMs: 500 }), asked };
  }

  const primary: HostRole = { standby: false, readOnly: false };
  const standby: HostRole = { standby: true, readOnly: false };

  it('connects to the writable host, whichever place it has in the list, and asks it first next time', async () => {
    const [a, b, c] = await cluster(3);
    const roles = new Map<number, HostRole | 'down'>([[a, standby], [b, 'down'], [c, primary]]);
    const { selector, asked } = selectorFor([a, b, c], 'read-write', roles);
    const s = await selector.socket();
    expect(s.remotePort).toBe(c);
    s.destroy();
    expect(asked).toEqual([a, b, c]);
    asked.length = 0;
    (await selector.socket()).destroy();
    expect(asked).toEqual([c]);
  });

  it('takes a standby for prefer-standby, and any host that answers when none is one; standby only for standby', async () => {
    const [a, b] = await cluster(2);
    const roles = new Map<number, HostRole | 'down'>([[a, primary], [b, standby]]);
    const prefer = selectorFor([a, b], 'prefer-standby', roles).selector;
    const s1 = await prefer.socket();
    expect(s1.remotePort).toBe(b);
    s1.destroy();
    roles.set(b, 'down');
    prefer.forget();
    const s2 = await prefer.socket();
    expect(s2.remotePort).toBe(a);
    s2.destroy();
    const strict = selectorFor([a, b], 'standby', roles).selector;
    const failed = await strict.socket();
    const err = await new Promise<Error>((resolve) => failed.once('error', resolve).write('x'));
    expect(err).toBeInstanceOf(DatabaseUnavailableError);
    expect(err.message).toBe(`No standby host among the 2 of DATABASE_URL: 127.0.0.1:${a} (primary), 127.0.0.1:${b} (connection refused).`);
  });

  it('with no writable host, fails each connection after its wait with every host named, logs it once, and logs the host that takes over', async () => {
    const [a, b] = await cluster(2);
    const roles = new Map<number, HostRole | 'down'>([[a, standby], [b, 'down']]);
    const { selector } = selectorFor([a, b], 'read-write', roles);
    const logs = captureLogs('info');
    try {
      for (let i = 0; i < 2; i++) {
        const started = Date.now();
        const s = await selector.socket();
        expect(Date.now() - started).toBeGreaterThanOrEqual(250);
        const err = await new Promise<Error>((resolve) => s.once('error', resolve).write('x'));
        expect(isDatabaseUnavailable(err)).toBe(true);
        expect(err.message).toBe(`No writable host among the 2 of DATABASE_URL: 127.0.0.1:${a} (standby), 127.0.0.1:${b} (connection refused).`);
      }
      const outage = logs.lines.filter((l) => /^No writable host/.test(String(l.msg)));
      expect(outage).toHaveLength(1);
      expect(outage[0]).toMatchObject({ level: 'error', hosts_tried: [`127.0.0.1:${a} (standby)`, `127.0.0.1:${b} (connection refused)`] });

      // The standby is promoted: the next connection goes to it, and the switch is told once.
      roles.set(a, primary);
      const s = await selector.socket();
      expect(s.remotePort).toBe(a);
      s.destroy();
      expect(logs.lines.filter((l) => String(l.msg) === `DATABASE_URL: connections go to 127.0.0.1:${a} (primary) now`)).toHaveLength(1);
    } finally {
      logs.stop();
    }
  });

  it('asks again when the host it chose refuses the connection (it went away since)', async () => {
    const [b] = await cluster(1);
    const gone = await closedPort();
    // `gone` answered as the primary, and was gone by the time the socket connected; meanwhile `b` took over.
    const roles = new Map<number, HostRole | 'down'>([[gone, primary], [b, primary]]);
    const { selector, asked } = selectorFor([gone, b], 'read-write', roles);
    const ask = (selector as unknown as { ask: (h: HostPort) => Promise<HostRole> }).ask;
    Object.assign(selector, {
      ask: async (h: HostPort) => {
        const role = await ask(h);
        if (h.port === gone) roles.set(gone, 'down');
        return role;
      },
    });
    const s = await selector.socket();
    expect(s.remotePort).toBe(b);
    s.destroy();
    expect(asked).toEqual([gone, gone, b]);
  });
});

describe.skipIf(process.env.TEST_DB !== 'postgres')('the driver after a connection that failed before its first write', () => {
  it('makes the next connection on that slot of the pool cleanly (repaired by scripts/patch-dependencies.mjs)', async () => {
    const base = new URL(inject('postgresUrl'));
    let n = 0;
    // postgres.js takes `socket` (documented in its README) though its types leave it out.
    const sql = postgres(inject('postgresUrl'), {
      max: 1,
      backoff: () => 0.05,
      connect_timeout: 3,
      onnotice: () => {},
      socket: (async () => {
        n++;
        if (n === 1) {
          // Closes before postgres.js's write timer has run, as a primary killed under load does.
          const s = new net.Socket();
          setImmediate(() => s.destroy(Object.assign(new Error('gone'), { code: 'ECONNRESET' })));
          return s;
        }
        return await new Promise<net.Socket>((resolve, reject) => {
          const s = net.connect({ host: base.hostname, port: Number(base.port) });
          s.once('connect', () => resolve(s)).once('error', reject);
        });
      }),
    } as postgres.Options<Record<string, never>>);
    try {
      await expect(sql`select 1`).rejects.toMatchObject({ code: 'ECONNRESET' });
      const started = Date.now();
      // Unrepaired, this waits for connect_timeout and fails with CONNECT_TIMEOUT, and so does every later try.
      expect(await sql`select 2 as x`).toEqual([{ x: 2 }]);
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});
