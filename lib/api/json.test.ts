import { describe, expect, it } from 'vitest';
import { InexactNumber, parseJsonBody } from './json';

const inexact = (source: string) => new InexactNumber(source);

describe('the body parse', () => {
  it('reads numbers a double holds exactly as numbers, skipping the scan when it can', () => {
    for (const raw of ['{"a":1,"b":0.1,"c":-0.5,"d":[1e5,1.5E+3,2e-3,-0]}', '123456789012345', '9007199254740992', '1e21', '0.000000000000001', '"12345678901234567"']) {
      const { value, inexact } = parseJsonBody(raw);
      expect(inexact, raw).toBe(false);
      expect(value, raw).toEqual(JSON.parse(raw));
    }
  });

  it('keeps the text of every number a double would round, wherever it sits', () => {
    const cases: [string, unknown][] = [
      ['12345678901234567', inexact('12345678901234567')],
      ['9007199254740993', inexact('9007199254740993')],
      ['0.1000000000000000001', inexact('0.1000000000000000001')],
      ['0.10000000000000001', inexact('0.10000000000000001')],
      ['1e400', inexact('1e400')],
      ['-1E+400', inexact('-1E+400')],
      ['1e-400', inexact('1e-400')],
      ['{"units":12345678901234567,"ok":1}', { units: inexact('12345678901234567'), ok: 1 }],
      // Integer-like keys come first in a JS object, and a repeated key keeps its last value:
      // neither may move a kept literal to another place.
      ['{"b":1e400,"2":0.5,"1":12345678901234567}', { b: inexact('1e400'), 2: 0.5, 1: inexact('12345678901234567') }],
      ['{"s":"tail\\\\","n":12345678901234567,"t":"\\"1e400"}', { s: 'tail\\', n: inexact('12345678901234567'), t: '"1e400' }],
      ['{"x":1e400,"x":3,"y":[1,99999999999999999999,"1e400 \\" 12345678901234567",2]}', { x: 3, y: [1, inexact('99999999999999999999'), '1e400 " 12345678901234567', 2] }],
    ];
    for (const [raw, expected] of cases) {
      const { value, inexact: found } = parseJsonBody(raw);
      expect(found, raw).toBe(true);
      expect(value, raw).toStrictEqual(expected);
    }
  });

  it('refuses what JSON.parse refuses', () => {
    for (const raw of ['{"a":}', '01', '{"a":1e400', '12345678901234567x']) expect(() => parseJsonBody(raw), raw).toThrow(SyntaxError);
  });
});
