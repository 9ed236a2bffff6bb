import { describe, expect, it } from 'vitest';
import { FAILING_PAUSE_MS, PER_COMPANY, PER_SLOW_WEBHOOK, PER_WEBHOOK, SendSlots, SLOW_MEMORY_MS, SLOW_SLOTS } from './send-slots';

/** Slots on a clock the test steps. */
function slotsAt(start = 1_000) {
  let t = start;
  const slots = new SendSlots(() => t);
  return { slots, step: (ms: number) => (t += ms) };
}

describe('the send slots of a process', () => {
  it('a webhook takes at most PER_WEBHOOK slots and a company PER_COMPANY over all its webhooks', () => {
    const { slots } = slotsAt();
    const first = slots.slotFor('w1', 'c1');
    for (let i = 0; i < PER_WEBHOOK; i++) {
      expect(slots.fits(first)).toBe(true);
      slots.hold(first);
    }
    expect(slots.fits(first)).toBe(false);
    expect(slots.fullWebhooks()).toEqual(['w1']);
    // The company's other webhooks fill the rest of its share, then none fits.
    let held = PER_WEBHOOK;
    for (let w = 2; held < PER_COMPANY; w++) {
      const s = slots.slotFor(`w${w}`, 'c1');
      expect(slots.fits(s)).toBe(true);
      slots.hold(s);
      held++;
    }
    expect(slots.fits(slots.slotFor('w99', 'c1'))).toBe(false);
    expect(slots.fullCompanies()).toEqual(['c1']);
    // Another company is untouched.
    expect(slots.fits(slots.slotFor('w100', 'c2'))).toBe(true);
    // Giving one back makes room again, and empty counters are forgotten.
    slots.release(first);
    expect(slots.fits(slots.slotFor('w99', 'c1'))).toBe(true);
    expect(slots.fullCompanies()).toEqual([]);
    for (let i = 1; i < PER_WEBHOOK; i++) slots.release(first);
    expect(slots.perWebhook.has('w1')).toBe(false);
  });

  it('a send taking half the timeout marks its webhook slow for SLOW_MEMORY_MS, a prompt answer clears it, no answer keeps it', () => {
    const { slots, step } = slotsAt();
    slots.noteDuration('w1', { durationMs: 4_999, answered: true, timedOut: false }, 10_000);
    expect(slots.isSlow('w1')).toBe(false);
    slots.noteDuration('w1', { durationMs: 5_000, answered: true, timedOut: false }, 10_000);
    expect(slots.isSlow('w1')).toBe(true);
    // A quick failure to connect says nothing about speed: it stays slow.
    slots.noteDuration('w1', { durationMs: 3, answered: false, timedOut: false }, 10_000);
    expect(slots.isSlow('w1')).toBe(true);
    step(SLOW_MEMORY_MS - 1);
    expect(slots.isSlow('w1')).toBe(true);
    step(1);
    expect(slots.isSlow('w1')).toBe(false);
    slots.noteDuration('w2', { durationMs: 10, answered: false, timedOut: true }, 10_000);
    expect(slots.isSlow('w2')).toBe(true);
    slots.noteDuration('w2', { durationMs: 10, answered: true, timedOut: false }, 10_000);
    expect(slots.isSlow('w2')).toBe(false);
  });

  it('a slow webhook gets PER_SLOW_WEBHOOK slot and all slow ones together SLOW_SLOTS', () => {
    const { slots } = slotsAt();
    for (let w = 0; w <= SLOW_SLOTS; w++) slots.noteDuration(`s${w}`, { durationMs: 9_000, answered: true, timedOut: false }, 10_000);
    const one = slots.slotFor('s0', 'c0');
    expect(one.slow).toBe(true);
    for (let i = 0; i < PER_SLOW_WEBHOOK; i++) slots.hold(one);
    expect(slots.fits(slots.slotFor('s0', 'c0'))).toBe(false);
    for (let w = 1; w < SLOW_SLOTS; w++) slots.hold(slots.slotFor(`s${w}`, `c${w}`));
    expect(slots.slowUsed).toBe(SLOW_SLOTS);
    // The last slow webhook, of a company with nothing held, finds no slow slot; a prompt one does.
    expect(slots.fits(slots.slotFor(`s${SLOW_SLOTS}`, 'fresh'))).toBe(false);
    expect(slots.fullWebhooks()).toContain(`s${SLOW_SLOTS}`);
    expect(slots.fits(slots.slotFor('prompt', 'fresh'))).toBe(true);
    slots.release(one);
    expect(slots.fits(slots.slotFor(`s${SLOW_SLOTS}`, 'fresh'))).toBe(true);
  });

  it('a webhook whose attempt failed is paused for FAILING_PAUSE_MS', () => {
    const { slots, step } = slotsAt();
    slots.pause('w1');
    expect(slots.paused()).toEqual(['w1']);
    step(FAILING_PAUSE_MS - 1);
    expect(slots.paused()).toEqual(['w1']);
    step(1);
    expect(slots.paused()).toEqual([]);
  });
});
