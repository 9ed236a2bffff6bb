import { describe, expect, it } from 'vitest';
import { consoleAddressProblem } from './address';

const problem = (address: string) => consoleAddressProblem(new URL(address, 'http://localhost'));

describe('a console address', () => {
  it('is taken as it is when every value can be stored and read once', () => {
    expect(problem('/console/accounts/a_123?q=ada%20l&after=a_1')).toBeNull();
    expect(problem('/console/events?account_id=a_1&type=caf%C3%A9')).toBeNull();
  });

  it('is refused with a NUL or a lone surrogate in its path or query, or a query parameter given twice', () => {
    expect(problem('/console/accounts/%00')).toContain('its path contains a NUL character');
    expect(problem('/console/accounts?q=%00')).toContain('query parameter "q" contains a NUL character');
    expect(problem('/console/events?%00=1')).toContain('contains a NUL character');
    expect(problem('/console/accounts?q=a&q=b')).toBe('This address is not valid: it gives the query parameter "q" more than once.');
    expect(problem('/console/accounts/%E0%A4%A')).toContain('not well-formed');
  });
});
