import { describe, expect, it } from 'vitest';
import { computeFollowingRefill, computeRefillSchedule } from './schedule';

const day = (x: Date) => x.toISOString().slice(0, 10);

describe('the monthly refill day', () => {
  it('keeps days 1 to 28 and moves the 29th to 31st to the 1st of the second following month', () => {
    for (let d = 1; d <= 31; d++) {
      const set = new Date(Date.UTC(2027, 0, d, 15, 30));
      const { refillOnDay, next } = computeRefillSchedule(set);
      if (d <= 28) {
        expect(refillOnDay).toBe(d);
        expect(day(next)).toBe(`2027-02-${String(d).padStart(2, '0')}`);
      } else {
        expect(refillOnDay).toBe(1);
        expect(day(next)).toBe('2027-03-01');
      }
      expect(next.getUTCHours()).toBe(0);
    }
  });

  it('handles month ends, leap years and year ends', () => {
    expect(day(computeRefillSchedule(new Date('2028-02-29T08:00:00Z')).next)).toBe('2028-04-01');
    expect(day(computeRefillSchedule(new Date('2027-02-28T08:00:00Z')).next)).toBe('2027-03-28');
    expect(day(computeRefillSchedule(new Date('2027-04-30T08:00:00Z')).next)).toBe('2027-06-01');
    expect(day(computeRefillSchedule(new Date('2027-11-30T08:00:00Z')).next)).toBe('2028-01-01');
    expect(day(computeRefillSchedule(new Date('2027-12-31T23:59:59Z')).next)).toBe('2028-02-01');
    expect(day(computeRefillSchedule(new Date('2027-12-15T00:00:00Z')).next)).toBe('2028-01-15');
  });

  it('steps month by month on the refill day', () => {
    let due = new Date('2027-01-15T00:00:00Z');
    const seen: string[] = [];
    for (let i = 0; i < 13; i++) {
      seen.push(day(due));
      due = computeFollowingRefill(due, 15);
    }
    expect(seen).toEqual(['2027-01-15', '2027-02-15', '2027-03-15', '2027-04-15', '2027-05-15', '2027-06-15', '2027-07-15', '2027-08-15', '2027-09-15', '2027-10-15', '2027-11-15', '2027-12-15', '2028-01-15']);
    expect(day(computeFollowingRefill(new Date('2027-12-01T00:00:00Z'), 1))).toBe('2028-01-01');
  });
});
