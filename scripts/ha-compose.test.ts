import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error plain ESM helper shared with the failover test
import { DURABILITY, DURABLE_POSTGRESQL } from './ha-cluster.mjs';

const root = path.resolve(__dirname, '..');
const read = (f: string) => fs.readFileSync(path.join(root, f), 'utf8');

/** The lines of one top-level service of compose.yaml, up to the next one. */
function service(compose: string, name: string): string {
  const m = new RegExp(`^ {2}${name}:\\n((?: {4}.*\\n|\\s*\\n)*)`, 'm').exec(compose);
  expect(m, `service ${name}`).not.toBeNull();
  return m![1];
}

describe('the `ha` compose profile', () => {
  const compose = read('compose.yaml');

  it('runs etcd, two Patroni nodes, and a migration step, app and worker on both nodes, only under the profile', () => {
    for (const name of ['etcd', 'pg1', 'pg2', 'migrate-ha', 'app-ha', 'worker-ha']) {
      const text = service(compose, name);
      // Directly, or through the x-patroni block the nodes merge in.
      expect(/profiles: \[ha\]/.test(text) || /<<: \*patroni\b/.test(text), name).toBe(true);
    }
    expect(compose).toMatch(/^x-patroni: &patroni\n(?: {2}.*\n)*? {2}profiles: \[ha\]/m);
    // The plain stack keeps no profile: `docker compose up` is what it was.
    for (const name of ['db', 'migrate', 'app', 'worker']) expect(service(compose, name)).not.toMatch(/profiles:/);
    // Both nodes in one URL, writes to whichever is the primary; lists from the standby.
    expect(compose).toMatch(/^ {2}DATABASE_URL: postgres:\/\/billing:\$\{BILLING_DB_PASSWORD:-billing\}@pg1:5432,pg2:5432\/billing\?target_session_attrs=read-write$/m);
    expect(service(compose, 'app-ha')).toMatch(/DATABASE_REPLICA_URL: postgres:\/\/\S+@pg1:5432,pg2:5432\/billing\?target_session_attrs=prefer-standby/);
    expect(service(compose, 'app-ha')).toMatch(/WORKER: "0"/);
    expect(service(compose, 'worker-ha')).toMatch(/command: \["node", "dist\/worker\.mjs"\]/);
    expect(service(compose, 'migrate-ha')).toMatch(/command: \["node", "dist\/migrate\.mjs"\]/);
    for (const node of ['pg1', 'pg2']) {
      const text = service(compose, node);
      expect(text).toMatch(new RegExp(`PATRONI_NAME: ${node}\\n`));
      expect(text).toMatch(new RegExp(`PATRONI_POSTGRESQL_CONNECT_ADDRESS: ${node}:5432`));
      expect(text).toMatch(new RegExp(`PATRONI_RESTAPI_CONNECT_ADDRESS: ${node}:8008`));
    }
  });

  it("builds the nodes' image from Debian's packages, with the files it copies, and bootstraps with the durability the failover test runs", () => {
    const dockerfile = read('deploy/ha/Dockerfile');
    expect(dockerfile).toMatch(/^FROM postgres:15/m);
    expect(dockerfile).toMatch(/apt-get install .*\bpatroni\b.*\betcd-server\b/);
    for (const [, src] of dockerfile.matchAll(/^COPY (\S+) /gm)) expect(fs.existsSync(path.join(root, 'deploy/ha', src)), src).toBe(true);
    const patroni = read('deploy/ha/patroni.yml');
    for (const [key, value] of Object.entries(DURABILITY as Record<string, unknown>)) expect(patroni, key).toMatch(new RegExp(`^ {4}${key}: ${value}$`, 'm'));
    expect(patroni).toMatch(new RegExp(`^ {6}use_pg_rewind: ${DURABLE_POSTGRESQL.use_pg_rewind}$`, 'm'));
    expect(patroni).toMatch(new RegExp(`^ {8}synchronous_commit: "${DURABLE_POSTGRESQL.synchronous_commit}"$`, 'm'));
    expect(patroni).toMatch(/^ {2}post_bootstrap: \/usr\/local\/bin\/billing-post-bootstrap$/m);
    expect(read('deploy/ha/post-bootstrap.sh')).toMatch(/CREATE DATABASE :"db" OWNER :"user";/);
  });
});
