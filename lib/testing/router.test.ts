import { describe, expect, it } from 'vitest';
import { dispatch } from './router';

describe('the in-process router', () => {
  it('answers concurrent first calls, each after the one read of the route table', async () => {
    const answers = await Promise.all(Array.from({ length: 8 }, () => dispatch(new Request('http://localhost/livez'))));
    expect(answers.map((r) => r.status)).toEqual(Array(8).fill(200));
  });
});
