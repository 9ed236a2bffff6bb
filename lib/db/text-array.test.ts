import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { useTestDatabase } from '../testing/harness';
import { arrayLiteral, query, sql, textArray } from './client';
import { NO_RETRY } from '../testing/retry';

const t = useTestDatabase();

/** Each element back from the database, in order, with NULL as null. */
async function roundTrip(values: (string | null)[]): Promise<(string | null)[]> {
  const rows = await query<{ v: string | null }>(t.database.db, sql`select v from unnest(${textArray(values)}) with ordinality as u(v, n) order by n`);
  return rows.map((r) => r.v);
}

describe('text arrays sent as one parameter', NO_RETRY, () => {
  it('reach the database element for element, whatever the text', async () => {
    const awkward = ['', 'NULL', 'null', ' padded ', 'a,b', '{x}', '"quoted"', 'back\\slash', '\\"', 'tab\there', 'line\nbreak', 'é ☃ 𝄞', '}', '{', ','];
    expect(await roundTrip([...awkward, null])).toEqual([...awkward, null]);
    expect(await roundTrip([])).toEqual([]);
    expect(await roundTrip([null, null])).toEqual([null, null]);
  });

  it('round-trips any strings a client can send', async () => {
    // PostgreSQL's text cannot hold U+0000; everything else can.
    const text = fc.string({ unit: fc.oneof(fc.constantFrom('"', '\\', '{', '}', ',', ' ', 'N', 'U', 'L'), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })), maxLength: 12 }).filter((s) => !s.includes('\u0000'));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.option(text, { nil: null }), { maxLength: 20 }), async (values) => {
        expect(await roundTrip(values)).toEqual(values);
      }),
      { numRuns: 200 },
    );
  });

  it('casts to the other types set-based statements use', async () => {
    const [row] = await query<{ n: string; at: string }>(
      t.database.db,
      sql`select (${textArray(['1.50', '-2'])}::numeric[])[1]::text as n, (${textArray(['2026-01-02T03:04:05.678Z'])}::timestamptz[])[1] = '2026-01-02T03:04:05.678Z'::timestamptz as at`,
    );
    expect(row).toEqual({ n: '1.50', at: true });
  });

  it('refuses an element left undefined instead of sending it as anything', () => {
    expect(() => arrayLiteral(['a', undefined as unknown as string])).toThrow(/element 1 is undefined/);
    expect(arrayLiteral(['a"b', 'c\\d', null])).toBe('{"a\\"b","c\\\\d",NULL}');
  });
});
