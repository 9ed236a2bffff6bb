import { describe, expect, it } from 'vitest';
import { loadEnv } from '../env';
import { needsHostChoice, parsePostgresUrl } from './postgres-url';

describe('PostgreSQL URLs with several hosts', () => {
  it('reads every host, its port (5432 when left out) and target_session_attrs, and gives the driver a one-host URL', () => {
    const u = parsePostgresUrl('postgres://app:s%40cret@db1.internal:5433,db2.internal,[::1]:6543/billing?sslmode=require&target_session_attrs=read-write&application_name=x');
    expect(u.hosts).toEqual([
      { host: 'db1.internal', port: 5433 },
      { host: 'db2.internal', port: 5432 },
      { host: '::1', port: 6543 },
    ]);
    expect(u.attrs).toBe('read-write');
    expect(u.singleHostUrl).toBe('postgres://app:s%40cret@db1.internal:5433/billing?sslmode=require&application_name=x');
    expect(needsHostChoice(u)).toBe(true);

    const one = parsePostgresUrl('postgresql://u@127.0.0.1/db');
    expect(one).toEqual({ hosts: [{ host: '127.0.0.1', port: 5432 }], attrs: 'any', singleHostUrl: 'postgresql://u@127.0.0.1:5432/db' });
    expect(needsHostChoice(one)).toBe(false);
    expect(parsePostgresUrl('postgres://u@h1,h2/db?target_session_attrs=prefer-standby').singleHostUrl).toBe('postgres://u@h1:5432/db');
    // A password holding an unencoded @: the hosts start after the last one.
    expect(parsePostgresUrl('postgres://u:p@ss@h1:1,h2:2/db').hosts).toEqual([
      { host: 'h1', port: 1 },
      { host: 'h2', port: 2 },
    ]);
  });

  it('refuses what the driver could not use, naming the problem but never the text around it', () => {
    expect(() => parsePostgresUrl('mysql://u@h/db')).toThrow(/is not a postgres/);
    expect(() => parsePostgresUrl('postgres://u@h1,,h2/db')).toThrow(/empty host \(number 2/);
    expect(() => parsePostgresUrl('postgres://u@h1:99999/db')).toThrow(/port out of range \(host number 1/);
    expect(() => parsePostgresUrl('postgres://u@h1/db?target_session_attrs=leader')).toThrow(/target_session_attrs=leader; it takes any, read-write/);
    // A password with an unencoded slash cuts the authority short: the error does not repeat it.
    let message = '';
    try {
      parsePostgresUrl('postgres://u:pa:ss/word@h/db');
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/not host or host:port/);
    expect(message).not.toMatch(/pa|ss|word/);
  });

  it('is what DATABASE_URL and DATABASE_REPLICA_URL take: a bad one stops the start naming the variable, not the password', () => {
    const base = { APP_SECRET: 'x'.repeat(32) };
    const env = loadEnv({ ...base, DATABASE_URL: 'postgres://app:pw@10.0.0.1:5432,10.0.0.2:5432/billing?target_session_attrs=read-write', DATABASE_REPLICA_URL: 'postgres://app:pw@10.0.0.2/billing' });
    expect(env.DATABASE_URL).toMatch(/10\.0\.0\.2:5432/);
    expect(() => loadEnv({ ...base, DATABASE_URL: 'postgres://app:hunter2@h1:5432,h2:70000/billing' })).toThrow(/^DATABASE_URL must be a postgres:\/\/ or postgresql:\/\/ URL, naming one host or several .* \(this one has a port out of range \(host number 2 in its list\)\)\.$/);
    expect(() => loadEnv({ ...base, DATABASE_URL: 'postgres://app:hunter2@h1:5432,h2:70000/billing' })).not.toThrow(/hunter2/);
    expect(() => loadEnv({ ...base, DATABASE_REPLICA_URL: 'postgres://app:pw@10.0.0.2/billing' })).toThrow(/DATABASE_REPLICA_URL needs DATABASE_URL/);
  });
});
