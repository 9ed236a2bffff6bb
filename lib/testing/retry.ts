/**
 * `npm test` runs a failed test once more and names, at its end, every test that passed only
 * then (a server slow to start on a loaded machine). A failure of a randomly generated test is a
 * counterexample, never noise: those run with this option and are not tried again.
 */
export const NO_RETRY = { retry: 0 } as const;
