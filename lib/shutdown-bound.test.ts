import { describe, expect, it, vi } from 'vitest';

// A database pool and a trace exporter that never finish closing.
vi.mock('./db/client', () => ({ closeDatabase: () => new Promise(() => {}) }));
vi.mock('./tracing', () => ({ flushTracing: () => new Promise(() => {}) }));
vi.mock('./jobs/worker', () => ({ stopWorker: async () => {} }));

const { CLOSE_GRACE_MS, shutdown } = await import('./shutdown');
const { withSettings } = await import('./env');

describe('a stop whose closing hangs', () => {
  it('ends within SHUTDOWN_TIMEOUT_MS and one CLOSE_GRACE_MS shared by the pool and the traces, with exit code 1', async () => {
    const started = Date.now();
    expect(await withSettings({ SHUTDOWN_TIMEOUT_MS: '200' }, () => shutdown())).toBe(1);
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(200 + CLOSE_GRACE_MS - 50);
    expect(took).toBeLessThan(200 + CLOSE_GRACE_MS + 1_000);
  }, 20_000);
});
