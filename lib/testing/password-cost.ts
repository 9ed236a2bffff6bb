import { hashPassword, MAX_CONCURRENT_HASHES, MAX_WAITING_HASHES, setHashGateForTests, setPasswordCostForTests, verifyPassword } from '../crypto';

// The database projects' test files hash passwords at scrypt N = 2^15, r = 1 (4 MiB, about 1/32
// of the real cost): the sign-in, team and registration tests check rules (lockouts, budgets,
// the hashing queue, the upgrade of older hashes, which needs parameters above those hashes'
// N = 2^14), not scrypt's cost. The unit project keeps the real parameters, and
// lib/crypto.test.ts checks them there; servers and commands a test starts hash at the real cost.
const TEST_COST = { N: 2 ** 15, r: 1, p: 1 };
setPasswordCostForTests(TEST_COST);

/** Runs `fn` with hashes at the real cost: for a test about what happens while one runs. */
export async function atRealPasswordCost<T>(fn: () => Promise<T>): Promise<T> {
  setPasswordCostForTests(null);
  try {
    return await fn();
  } finally {
    setPasswordCostForTests(TEST_COST);
  }
}

/**
 * Takes every hashing slot and fills the queue behind them with password checks that wait until
 * `release()`, however fast a hash is at the test cost: meanwhile hashingSaturated() holds and a
 * check asked for is refused at once. A hash asked for past them lets them go, so a check that
 * queues where it should have been refused is answered (the test sees what it answered) instead
 * of waiting for ever. `release` lets them run and returns once they all have.
 */
export async function holdHashing(): Promise<{ release: () => Promise<void> }> {
  const hash = await hashPassword('filler password 1');
  let open!: () => void;
  const held = new Promise<void>((resolve) => (open = resolve));
  const fillers = MAX_CONCURRENT_HASHES + MAX_WAITING_HASHES;
  let asked = 0;
  setHashGateForTests(() => {
    if (++asked > fillers) open();
    return held;
  });
  const checks = Array.from({ length: fillers }, () => verifyPassword('filler password 1', hash));
  return {
    release: async () => {
      open();
      try {
        if (!(await Promise.all(checks)).every(Boolean)) throw new Error('a held password check did not match');
      } finally {
        setHashGateForTests(null);
      }
    },
  };
}
