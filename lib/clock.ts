import { setting, testRunnerOnly } from './env';

/**
 * The service's only source of time. With BILLING_TEST_CLOCK=1 the clock is frozen at the
 * real time it was first read and moves only by `advance` (shared through the database by
 * the test-clock routes and the worker), so scenarios over months run in seconds.
 */
type ClockState = { frozenAt: number | null; wall?: (() => number) | null };
const state: ClockState = ((globalThis as { __billingClock?: ClockState }).__billingClock ??= { frozenAt: null });

export function isTestClock(): boolean {
  return setting('BILLING_TEST_CLOCK');
}

export function now(): Date {
  if (!isTestClock()) return new Date();
  if (state.frozenAt === null) state.frozenAt = Date.now();
  return new Date(state.frozenAt);
}

/** Sets the test clock (never backwards). */
export function setTestTime(ms: number): void {
  if (!isTestClock()) throw new Error('the test clock is off');
  if (state.frozenAt === null || ms > state.frozenAt) state.frozenAt = ms;
}

/**
 * Real time, whatever the service clock says: for what leaves the service and is checked against
 * the receiver's own clock (webhook signature timestamps, decisions.md), and for the processor's
 * own time limits (its 24-hour idempotency keys), which a test clock does not move.
 */
export function wallClock(): Date {
  return new Date(state.wall ? state.wall() : Date.now());
}

/**
 * Tests and the charge simulation only: real time as `read` says (a day passing at the
 * processor in a test of a second). Returns what puts real time back.
 */
export function replaceWallClock(read: () => number): () => void {
  const before = state.wall ?? null;
  state.wall = read;
  return () => {
    state.wall = before;
  };
}

/** Tests only: the clock as a new process finds it (no test time read or set yet, real wall time). */
export function resetClockForTests(): void {
  testRunnerOnly('resetClockForTests');
  state.frozenAt = null;
  state.wall = null;
}
