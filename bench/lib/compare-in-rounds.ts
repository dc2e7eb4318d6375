import { ratio, type LoadResult } from './stats.js';

/** One side of a comparison: a load of `operations`, measured. */
export interface ComparedSide {
  name: string;
  load: (operations: number) => Promise<LoadResult>;
}

/** Ours against a reference, read as `ours[field] ÷ reference[field]`. */
export interface Comparison {
  ratio: string;
  field: 'p50Ms' | 'rowsPerSec' | 'requestsPerSec';
  /** what the ratio should be, e.g. `<= 1.3` */
  target: string;
  operations: number;
  warmUpOperations: number;
  ours: ComparedSide;
  reference: ComparedSide;
}

export interface ComparedRatio {
  /** the median of the rounds' ratios */
  ratio: number;
  rounds: number[];
  target: string;
}

export interface ComparisonResults {
  /** each side's median round (by the comparison's field), by the side's name */
  sides: Map<string, LoadResult>;
  ratios: Record<string, ComparedRatio>;
}

const median = <T>(values: readonly T[], by: (value: T) => number): T => [...values].sort((a, b) => by(a) - by(b))[Math.floor(values.length / 2)]!;

/**
 * Measures every comparison `rounds` times over, its two sides one after the other. note: this
 * shared machine's speed swings by tens of percent within a minute, so the sides alternate and a
 * ratio is the median of the rounds' ratios; which side goes first alternates too, so that
 * neither always follows the same load.
 */
export async function compareInRounds(comparisons: readonly Comparison[], rounds: number): Promise<ComparisonResults> {
  for (const c of comparisons) for (const side of [c.ours, c.reference]) await side.load(c.warmUpOperations);
  const measured = comparisons.map(() => ({ ours: [] as LoadResult[], reference: [] as LoadResult[] }));
  for (let round = 0; round < rounds; round += 1) {
    for (const [i, c] of comparisons.entries()) {
      const order = round % 2 === 0 ? (['ours', 'reference'] as const) : (['reference', 'ours'] as const);
      for (const side of order) measured[i]![side].push(await c[side].load(c.operations));
    }
  }
  const sides = new Map<string, LoadResult>();
  const ratios: Record<string, ComparedRatio> = {};
  for (const [i, c] of comparisons.entries()) {
    const { ours, reference } = measured[i]!;
    sides.set(c.ours.name, median(ours, (r) => r[c.field]));
    sides.set(c.reference.name, median(reference, (r) => r[c.field]));
    const perRound = ours.map((r, n) => ratio(r[c.field], reference[n]![c.field]));
    ratios[c.ratio] = { ratio: median(perRound, (v) => v), rounds: perRound, target: c.target };
  }
  return { sides, ratios };
}
