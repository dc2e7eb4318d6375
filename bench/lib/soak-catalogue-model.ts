import type { CatalogueFindings } from './soak-catalogue-findings.js';
import { entriesOf, type CatalogueOp, type CatalogueWrite, type MirrorFacts, type MirrorOp, type TableRow } from './soak-catalogue-log.js';

/**
 * A model of one catalogue account, built by replaying its log (soak-catalogue-log.ts) by the
 * rules of docs/catalogue.md and decisions K, and compared with the table after each mirror
 * (the snapshot its client took) and at the end.
 *
 * The rule of a mirror's removal (K.6), as the model applies it: a row that is not on any line
 * of the file (an invalid line names its row too), active (or archived, with `missing=delete`),
 * is removed when its last write was answered before the upload began (`upload_began_at`); it
 * stays when that write was sent after it. A write is a creation, a change, a restore or an
 * archive; an upsert or merge that changes nothing is none. A row whose last write was sent
 * before and answered after that moment may go either way: it becomes *ambiguous*, as does a row
 * whose fate no answer tells (a request unserved, a write answered while a mirror was being
 * written), and is left out of every later comparison, counted.
 */

/** Two clocks read to the millisecond (the soak's `Date.now()`, PostgreSQL's microseconds) are compared with this much to spare. */
export const CLOCK_MARGIN_MS = 2;

type Presence = 'active' | 'archived' | 'gone';
const PRESENCE_RANK: Record<Presence, number> = { active: 2, archived: 1, gone: 0 };

/** A doubt that is a failure already reported, not an ambiguity. */
const DIFFERED = 'differed from the model (reported)';

interface ModelRow {
  presence: Presence;
  price: number;
  /** the earliest and latest moment its last write may have happened */
  written: [number, number];
  /** why what it holds cannot be known; such a row is left out of every comparison from then on */
  doubt?: string;
  /** the mirror (its request id prefix) whose done removal left it out since its last write */
  leftOutSinceWrite?: string;
  /** the mirror during whose upload a write sent after the upload began wrote it */
  writtenDuringUpload?: number;
  /** the mirror during whose upload an upsert or merge that changed nothing was sent after it began */
  resentUnchangedDuring?: number;
}

type Counts = Record<'inserted' | 'updated' | 'unchanged' | 'archived' | 'deleted' | 'skipped', number>;
const ANSWER_FIELDS: Record<CatalogueWrite['type'], (keyof Counts)[]> = {
  upsert: ['inserted', 'updated', 'unchanged', 'skipped'],
  merge: ['inserted', 'updated', 'unchanged', 'skipped'],
  archive: ['archived', 'unchanged', 'skipped'],
  delete: ['deleted', 'skipped'],
};

/** What a write of `type` does to a row; `wrote` says whether that moves its `updated_at`. */
function effect(row: ModelRow, type: CatalogueWrite['type'], price: number): { presence: Presence; price: number; counted: keyof Counts; wrote: boolean } {
  const { presence } = row;
  if (type === 'delete') return presence === 'gone' ? { presence, price, counted: 'skipped', wrote: false } : { presence: 'gone', price, counted: 'deleted', wrote: true };
  if (type === 'archive') {
    if (presence === 'gone') return { presence, price: row.price, counted: 'skipped', wrote: false };
    return presence === 'archived' ? { presence, price: row.price, counted: 'unchanged', wrote: false } : { presence: 'archived', price: row.price, counted: 'archived', wrote: true };
  }
  // note: a merge of a row that is not there carries only the price, not a whole row: it fails.
  if (presence === 'gone') return type === 'merge' ? { presence, price: row.price, counted: 'skipped', wrote: false } : { presence: 'active', price, counted: 'inserted', wrote: true };
  if (presence === 'archived' || row.price !== price) return { presence: 'active', price, counted: 'updated', wrote: true };
  return { presence, price, counted: 'unchanged', wrote: false };
}

export class AccountModel {
  private readonly rows = new Map<string, ModelRow>();
  /** the end of the latest mirror's writing, when its client went on without seeing it completed */
  private unwaitedUntil = -Infinity;

  constructor(
    private readonly account: string,
    private readonly findings: CatalogueFindings,
  ) {}

  /** Replays the log, each mirror with the import the table kept of it, comparing with each mirror's snapshot. */
  replay(log: readonly CatalogueOp[], factsOf: (op: MirrorOp) => MirrorFacts | undefined): void {
    log.forEach((op, index) => (op.type === 'mirror' ? this.mirror(op, index, factsOf(op)) : this.write(op, this.sentWhileUnwaited(op))));
  }

  private row(id: string): ModelRow {
    let row = this.rows.get(id);
    if (row === undefined) {
      row = { presence: 'gone', price: 0, written: [-Infinity, -Infinity] };
      this.rows.set(id, row);
    }
    return row;
  }

  private doubt(id: string, why: string): void {
    const row = this.row(id);
    row.doubt ??= why;
    if (why !== DIFFERED && row.doubt !== DIFFERED && !this.findings.ambiguous.has(`${this.account} ${id}`)) this.findings.ambiguous.set(`${this.account} ${id}`, row.doubt);
  }

  private sentWhileUnwaited(op: CatalogueWrite): string | undefined {
    return op.sentAt < this.unwaitedUntil + CLOCK_MARGIN_MS ? `sent while a mirror its client stopped waiting for was being written: ${op.requestIdPrefix}` : undefined;
  }

  /**
   * Applies a write as its answer says it happened, and checks the answer's counts: exactly the
   * model's, or within what its rows of unknown state may add. `doubt`: its rows cannot be known
   * whatever the answer; `during`: it was sent while mirror `index`'s file was uploaded, which
   * began at `beganAt`.
   */
  private write(op: CatalogueWrite, doubt: string | undefined, during?: { index: number; beganAt: number }): void {
    const entries = entriesOf(op);
    if (op.end !== 'answered' && op.end !== 'refused') doubt ??= `no answer: ${op.end ?? 'interrupted'} ${op.requestIdPrefix}`;
    if (doubt !== undefined) {
      for (const { id } of entries) this.doubt(id, doubt);
      return;
    }
    const counts: Counts = { inserted: 0, updated: 0, unchanged: 0, archived: 0, deleted: 0, skipped: 0 };
    const unknown = entries.filter(({ id }) => this.row(id).doubt !== undefined);
    const effects = entries
      .filter(({ id }) => this.row(id).doubt === undefined)
      .map(({ id, price }) => {
        const next = effect(this.row(id), op.type, price);
        counts[next.counted] += 1;
        return { id, ...next };
      });
    const differs = this.answerDiffers(op, counts, unknown.length);
    if (differs !== undefined) {
      this.findings.wrongAnswers.push(`${this.account} ${op.type} ${op.requestIdPrefix}: ${differs}`);
      for (const { id } of entries) this.doubt(id, DIFFERED);
      return;
    }
    for (const { id } of unknown) this.doubt(id, `written while unknown: ${op.requestIdPrefix}`);
    if (op.end === 'refused') return;
    const after = during !== undefined && op.sentAt >= during.beganAt + CLOCK_MARGIN_MS;
    for (const next of effects) {
      const row = this.row(next.id);
      row.presence = next.presence;
      row.price = next.price;
      if (next.wrote) {
        row.written = [op.sentAt, op.answeredAt!];
        row.leftOutSinceWrite = undefined;
        if (after) row.writtenDuringUpload = during.index;
      } else if (after && next.counted === 'unchanged') {
        row.resentUnchangedDuring = during.index;
      }
    }
  }

  /** Whether the answer differs from the model's counts, each of which `unknown` rows may raise by one. */
  private answerDiffers(op: CatalogueWrite, counts: Counts, unknown: number): string | undefined {
    const fields = ANSWER_FIELDS[op.type];
    const expected = JSON.stringify(Object.fromEntries(fields.map((field) => [field, unknown > 0 ? `${counts[field]} to ${counts[field] + unknown}` : counts[field]])));
    const got = JSON.stringify(op.answer ?? {}).slice(0, 300);
    // note: an archive or delete none of whose entries names a row is refused 400 (no valid rows), not answered.
    const maybeNoneDone = (op.type === 'archive' || op.type === 'delete') && fields.every((field) => field === 'skipped' || counts[field] === 0);
    const surelyNoneDone = maybeNoneDone && unknown === 0;
    if (op.end === 'refused') return maybeNoneDone ? undefined : `refused ${got}; the model expected ${expected}`;
    if (surelyNoneDone) return `answered ${got}; the model expected 400 no valid rows`;
    const outside = (field: keyof Counts) => {
      const value = op.answer?.[field];
      return typeof value !== 'number' || value < counts[field] || value > counts[field] + unknown;
    };
    if (fields.some(outside)) return `answered ${got}; the model expected ${expected}`;
    return undefined;
  }

  /** Applies a mirror: the writes sent while its file arrived, its file's rows, its removal; then compares with the snapshot its client took. */
  private mirror(op: MirrorOp, index: number, facts: MirrorFacts | undefined): void {
    const name = `${this.account} mirror ${op.requestIdPrefix} (${op.missing}, max ${op.maxRemoval}%)`;
    const outcome = { account: this.account, missing: op.missing, meant: op.meant, state: facts?.removal.state ?? 'none', rows: facts?.removal.rows ?? 0 };
    this.findings.mirrors.push(outcome);
    const fileIds = new Set(op.lines.map((line) => line.id));
    if (facts === undefined) {
      // note: no upload of it was accepted, so none of it was written; its writes are plain writes.
      if (op.end === 'answered') this.findings.wrongMirrors.push(`${name}: answered 202 (${op.importId}), and no import of it is in the table`);
      for (const write of op.race) this.write(write, this.sentWhileUnwaited(write));
      return;
    }
    this.mirrorKept(op, index, name, facts, fileIds);
    // note: from the next operation on; the writes alongside its file meet its writing by their own rule.
    if (op.completedSeenAt === undefined) this.unwaitedUntil = Math.max(this.unwaitedUntil, facts.finishedAt ?? Infinity);
  }

  /** A mirror an upload of which was accepted: the writes alongside it, its file's rows, its removal, the snapshot. */
  private mirrorKept(op: MirrorOp, index: number, name: string, facts: MirrorFacts, fileIds: ReadonlySet<string>): void {
    const { beganAt, acceptedAt } = facts;

    // The guard's base: the rows active when the upload began, before or after the writes sent meanwhile.
    const base = { low: 0, high: 0 };
    for (const row of this.rows.values()) {
      if (row.doubt !== undefined) base.high += 1;
      else if (row.presence === 'active') {
        base.low += 1;
        base.high += 1;
      }
    }
    for (const write of op.race) {
      const ids = entriesOf(write).map((entry) => entry.id);
      const activeBefore = ids.map((id) => this.row(id).presence === 'active' && this.row(id).doubt === undefined);
      // note: a write answered after the file's acceptance may have met the removal either side of it.
      const writtenAlongside = write.answeredAt === undefined || write.answeredAt + CLOCK_MARGIN_MS > acceptedAt;
      const onFile = ids.some((id) => fileIds.has(id));
      this.write(
        write,
        writtenAlongside ? `answered once its mirror was accepted: ${write.requestIdPrefix}` : onFile ? `a write during the upload named a row of the file: ${write.requestIdPrefix}` : this.sentWhileUnwaited(write),
        { index, beganAt },
      );
      ids.forEach((id, i) => {
        const row = this.row(id);
        const delta = (row.presence === 'active' && row.doubt === undefined ? 1 : 0) - (activeBefore[i] ? 1 : 0);
        if (row.doubt !== undefined) {
          base.high += 1;
        } else if (write.answeredAt! + CLOCK_MARGIN_MS <= beganAt) {
          base.low += delta;
          base.high += delta;
        } else if (write.sentAt < beganAt + CLOCK_MARGIN_MS) {
          // note: answered after the upload began, sent before it: it may or may not count.
          base[delta > 0 ? 'high' : 'low'] += delta;
        }
      });
    }

    if (facts.state !== 'completed') {
      this.findings.wrongMirrors.push(`${name}: its import ${facts.importId} is ${facts.state}, not completed`);
      for (const line of op.lines) this.doubt(line.id, `its mirror did not complete: ${op.requestIdPrefix}`);
      return;
    }
    const finishedAt = facts.finishedAt ?? Infinity;
    this.writeFile(op, name, facts, [acceptedAt, finishedAt]);
    this.remove(op, index, name, facts, fileIds, base);
    if (op.after !== undefined) this.compare(op.after, `after ${name}`);
  }

  /** The file's rows, each an upsert written between its acceptance and its end; its counts must be the import's. */
  private writeFile(op: MirrorOp, name: string, facts: MirrorFacts, written: [number, number]): void {
    const counts: Counts = { inserted: 0, updated: 0, unchanged: 0, archived: 0, deleted: 0, skipped: 0 };
    let known = true;
    for (const line of op.lines) {
      if (!line.valid) {
        counts.skipped += 1;
        continue;
      }
      const row = this.row(line.id);
      const next = effect(row, 'upsert', line.price);
      if (row.doubt !== undefined) known = false;
      counts[next.counted] += 1;
      row.presence = next.presence;
      row.price = next.price;
      if (next.wrote) {
        row.written = row.doubt === undefined ? written : [Math.min(row.written[0], written[0]), written[1]];
        row.leftOutSinceWrite = undefined;
      }
    }
    const got = facts.counts;
    if (known && (got.inserted !== counts.inserted || got.updated !== counts.updated || got.unchanged !== counts.unchanged || got.skipped !== counts.skipped)) {
      this.findings.wrongMirrors.push(`${name}: its file wrote ${JSON.stringify(got)}; the model expected ${JSON.stringify({ inserted: counts.inserted, updated: counts.updated, unchanged: counts.unchanged, skipped: counts.skipped })}`);
    }
  }

  /** The removal of the rows the file left out (K.6), held or done as the import says, checked against the model's bounds. */
  private remove(op: MirrorOp, index: number, name: string, facts: MirrorFacts, fileIds: ReadonlySet<string>, base: { low: number; high: number }): void {
    const { beganAt } = facts;
    const sure: string[] = [];
    const maybe: string[] = [];
    const kept: string[] = [];
    for (const [id, row] of this.rows) {
      if (fileIds.has(id)) continue;
      if (row.doubt !== undefined) {
        maybe.push(id);
        continue;
      }
      if (row.presence !== 'active' && !(op.missing === 'delete' && row.presence === 'archived')) continue;
      if (row.written[1] + CLOCK_MARGIN_MS <= beganAt) sure.push(id);
      else if (row.written[0] >= beganAt + CLOCK_MARGIN_MS) kept.push(id);
      else maybe.push(id);
    }
    const { state, rows } = facts.removal;
    const possible = new Set<string>();
    if (op.maxRemoval === 100 || sure.length * 100 <= base.high * op.maxRemoval) possible.add('done');
    if (op.maxRemoval < 100 && (sure.length + maybe.length) * 100 > base.low * op.maxRemoval) possible.add('held');
    const expected = `${[...possible].join(' or ')} with ${sure.length}${maybe.length > 0 ? ` to ${sure.length + maybe.length}` : ''} rows, base ${base.low}${base.high > base.low ? ` to ${base.high}` : ''}`;
    if (!possible.has(state) || rows < sure.length || rows > sure.length + maybe.length || (facts.base !== null && (facts.base < base.low || facts.base > base.high))) {
      this.findings.wrongMirrors.push(`${name}: its removal is ${state} with ${rows} rows, base ${facts.base}; the model expected ${expected}`);
    }
    if (state !== 'done') return;
    const [acceptedAt, finishedAt] = [facts.acceptedAt, facts.finishedAt ?? Infinity];
    for (const id of sure) {
      const row = this.row(id);
      this.findings.removedByMirrors += 1;
      if (row.resentUnchangedDuring === index) this.findings.removedAfterUnchangedResend += 1;
      row.presence = op.missing === 'archive' ? 'archived' : 'gone';
      row.written = [acceptedAt, finishedAt];
      row.leftOutSinceWrite = op.requestIdPrefix;
    }
    for (const id of maybe) this.doubt(id, `written as its mirror's upload began, or unknown then: ${op.requestIdPrefix}`);
    for (const id of kept) {
      const row = this.row(id);
      if (row.writtenDuringUpload === index) this.findings.keptByWritesDuringUpload.push({ account: this.account, id, mirror: op.requestIdPrefix });
      row.leftOutSinceWrite = op.requestIdPrefix;
    }
  }

  /** Compares the model with the account's rows as the table holds them (`when`); a row that differs is reported once, and left out from then on. */
  compare(table: ReadonlyMap<string, TableRow>, when: string): void {
    for (const id of new Set([...this.rows.keys(), ...table.keys()])) {
      const found = table.get(id);
      const line = (what: string) => `${this.account} ${id} ${when}: ${what}`;
      if (found !== undefined && found.copies > 1 && !this.findings.duplicated.some((entry) => entry.startsWith(`${this.account} ${id} `))) this.findings.duplicated.push(line(`${found.copies} rows`));
      const row = this.rows.get(id);
      if (row === undefined) {
        this.findings.unknown.push(line('in the table, never sent'));
        this.doubt(id, DIFFERED);
        continue;
      }
      if (row.doubt !== undefined) continue;
      const presence: Presence = found === undefined ? 'gone' : found.archived ? 'archived' : 'active';
      if (presence === row.presence) {
        if (found !== undefined && found.price !== row.price) {
          this.findings.wrongContent.push(line(`price ${found.price}, the model's ${row.price}`));
          this.doubt(id, DIFFERED);
        }
        continue;
      }
      const what = line(`${presence} in the table, ${row.presence} in the model`);
      if (PRESENCE_RANK[presence] > PRESENCE_RANK[row.presence]) this.findings.notRemoved.push(what);
      else if (row.leftOutSinceWrite !== undefined) this.findings.wrongRemovals.push(`${what} (left out by mirror ${row.leftOutSinceWrite})`);
      else this.findings.lost.push(what);
      this.doubt(id, DIFFERED);
    }
  }
}
