/**
 * A seeded generator (mulberry32): the same seed gives the same workload and the same fault
 * plan, so a failing run can be replayed with FAULTS_SEED (timing still varies from run to run).
 */
export class Random {
  private state: number;

  constructor(readonly seed: number) {
    this.state = seed >>> 0;
  }

  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)];
  }

  /** A generator of its own for one part of the run, independent of how much the others draw. */
  fork(label: string): Random {
    let h = this.seed ^ 0x9e3779b9;
    for (const c of label) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193);
    return new Random(h >>> 0);
  }
}

/** FAULTS_SEED when given (to replay a run), otherwise a fresh one. */
export function runSeed(): number {
  const raw = process.env.FAULTS_SEED?.trim();
  if (raw) {
    if (!/^\d+$/.test(raw) || Number(raw) > 0xffffffff) throw new Error(`FAULTS_SEED must be a whole number below 2^32; got "${raw}"`);
    return Number(raw);
  }
  return Math.floor(Math.random() * 0xffffffff);
}
