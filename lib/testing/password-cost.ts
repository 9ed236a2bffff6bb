import { setPasswordCostForTests } from '../crypto';

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
