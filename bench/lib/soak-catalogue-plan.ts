import type { CatalogueRow, MirrorLine, MirrorOp, RowsRemoval, RowsWrite, TableRow } from './soak-catalogue-log.js';
import { soakListing } from './soak-rows.js';

/**
 * What a catalogue client sends next, chosen from its account's rows as they stand (the choice
 * only needs to be sensible: the check replays what was sent, whatever it was). Every id of an
 * account is `cat<account>-<n>`, so accounts never share one.
 */

export type WritePlan = Pick<RowsWrite, 'type' | 'rows'> | Pick<RowsRemoval, 'type' | 'ids'>;
export type MirrorPlan = Pick<MirrorOp, 'missing' | 'maxRemoval' | 'meant' | 'lines'> & { race: WritePlan[] };
export type Random = () => number;

/** The rows a catalogue is seeded with. */
const SEED_ROWS = 50;
/** Below this many active rows, every write is an upsert that creates more. */
const LOW_ACTIVE_ROWS = 25;

/** Fresh `external_id`s of one account. */
export class CatalogueIds {
  private n = 0;
  constructor(private readonly prefix: string) {}
  next(): string {
    this.n += 1;
    return `${this.prefix}-${this.n}`;
  }
}

/** The listing a row is sent as: a whole soak listing with its `external_id` and price. */
export function catalogueListing(row: CatalogueRow): Record<string, unknown> {
  return { ...soakListing(`soak-${row.id}`, true, 0), external_id: row.id, price_cents: row.price };
}

const newPrice = (random: Random, not?: number): number => {
  const price = 100 + Math.floor(random() * 9_000);
  return price === not ? price + 1 : price;
};
const between = (random: Random, low: number, high: number) => low + Math.floor(random() * (high - low + 1));

function shuffled<T>(items: readonly T[], random: Random): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** The account's ids by state, each list shuffled, and a way to take ids that no other part of the plan took. */
function pools(view: ReadonlyMap<string, TableRow>, random: Random) {
  const active = shuffled([...view].filter(([, row]) => !row.archived).map(([id]) => id), random);
  const archived = shuffled([...view].filter(([, row]) => row.archived).map(([id]) => id), random);
  const take = (from: string[], count: number) => from.splice(0, Math.max(0, Math.min(count, from.length)));
  return { active, archived, take, priceOf: (id: string) => view.get(id)!.price };
}

export function seedPlan(ids: CatalogueIds, random: Random): WritePlan {
  return { type: 'upsert', rows: Array.from({ length: SEED_ROWS }, () => ({ id: ids.next(), price: newPrice(random) })) };
}

/**
 * One write between mirrors: an upsert (new rows, changed ones, one sent again as it is, an
 * archived one restored), a merge of prices, an archive or a delete of a few rows.
 */
export function nextWrite(view: ReadonlyMap<string, TableRow>, ids: CatalogueIds, random: Random): WritePlan {
  const { active, archived, take, priceOf } = pools(view, random);
  const roll = random();
  if (roll < 0.35 || active.length < LOW_ACTIVE_ROWS) {
    const fresh = active.length < LOW_ACTIVE_ROWS ? between(random, 5, 10) : between(random, 1, 3);
    return {
      type: 'upsert',
      rows: [
        ...Array.from({ length: fresh }, () => ({ id: ids.next(), price: newPrice(random) })),
        ...take(active, between(random, 1, 3)).map((id) => ({ id, price: newPrice(random, priceOf(id)) })),
        ...take(active, between(random, 0, 1)).map((id) => ({ id, price: priceOf(id) })),
        ...take(archived, between(random, 0, 1)).map((id) => ({ id, price: priceOf(id) })),
      ],
    };
  }
  if (roll < 0.6) {
    return {
      type: 'merge',
      rows: [
        ...take(active, between(random, 1, 3)).map((id) => ({ id, price: newPrice(random, priceOf(id)) })),
        ...take(archived, between(random, 0, 1)).map((id) => ({ id, price: newPrice(random, priceOf(id)) })),
        ...take(active, between(random, 0, 1)).map((id) => ({ id, price: priceOf(id) })),
      ],
    };
  }
  if (roll < 0.8) return { type: 'archive', ids: [...take(active, between(random, 1, 4)), ...take(archived, between(random, 0, 1))] };
  return { type: 'delete', ids: [...take(active, between(random, 1, 2)), ...take(archived, between(random, 0, 1))] };
}

/**
 * A mirror: a file of the account's active rows but some left out (10-25 %, and `max_removal=100`,
 * when it is meant to remove them; 30-40 % under the default guard of 10 % when it is meant to be
 * held), some archived rows restored, a few new ones, one line in four invalid; and the writes to
 * send while the file arrives, each of a row the file does not name: new rows and rows left out
 * merged with a new price (they must stay), rows left out sent again unchanged, by a merge and by
 * an upsert (they must go), an archived row restored by a merge (it must stay).
 */
export function planMirror(view: ReadonlyMap<string, TableRow>, ids: CatalogueIds, meant: MirrorPlan['meant'], missing: MirrorPlan['missing'], random: Random): MirrorPlan {
  const { active, archived, take, priceOf } = pools(view, random);
  const share = meant === 'held' ? 0.3 + random() * 0.1 : 0.1 + random() * 0.15;
  const leftOut = take(active, Math.max(4, Math.round(share * active.length)));
  const lines: MirrorLine[] = [
    ...active.map((id) => ({ id, price: random() < 0.2 ? newPrice(random, priceOf(id)) : priceOf(id), valid: true })),
    ...take(archived, Math.round(archived.length * 0.4)).map((id) => ({ id, price: priceOf(id), valid: true })),
    ...Array.from({ length: between(random, 1, 3) }, () => ({ id: ids.next(), price: newPrice(random), valid: true })),
  ];
  // note: an invalid line still names its row, which keeps its place whatever the file leaves out.
  if (random() < 0.25 && lines.length > 0) lines[Math.floor(random() * lines.length)]!.valid = false;
  const one = (row: CatalogueRow, type: 'upsert' | 'merge'): WritePlan => ({ type, rows: [row] });
  const race: WritePlan[] = [
    ...Array.from({ length: between(random, 1, 2) }, () => one({ id: ids.next(), price: newPrice(random) }, 'upsert')),
    ...take(leftOut, between(random, 1, 2)).map((id) => one({ id, price: newPrice(random, priceOf(id)) }, 'merge')),
    ...take(leftOut, 1).map((id) => one({ id, price: priceOf(id) }, 'merge')),
    ...take(leftOut, 1).map((id) => one({ id, price: priceOf(id) }, 'upsert')),
    ...take(archived, 1).map((id) => one({ id, price: newPrice(random, priceOf(id)) }, 'merge')),
  ];
  return { missing, maxRemoval: meant === 'held' ? 10 : 100, meant, lines: shuffled(lines, random), race: shuffled(race, random) };
}
