import { invalid } from '../../errors';

/** A denomination: 1 to 64 letters, digits and `. _ : -`, starting with a letter or digit. */
export const DENOMINATION_RE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;

export function checkDenomination(denomination: string): string {
  if (!DENOMINATION_RE.test(denomination)) {
    throw invalid('A denomination is 1 to 64 letters, digits, and . _ : - (starting with a letter or digit).', 'denomination');
  }
  return denomination;
}
