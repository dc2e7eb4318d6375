import { randomUUID } from 'node:crypto';
import { pause } from './pause.js';
import type { CatalogueOp, CatalogueWrite, MirrorOp } from './soak-catalogue-log.js';
import { catalogueListing, type MirrorPlan, type WritePlan } from './soak-catalogue-plan.js';
import { isUploading, readCatalogue } from './soak-catalogue-tables.js';
import { sendWrite, type CatalogueContext } from './soak-catalogue-write.js';
import { serveSlowUpload, waitWritten, type SlowUploadRecord } from './soak-slow-uploads.js';

/** How long the writes wait to see the upload recorded before they start anyway. */
const SEE_UPLOAD_WITHIN_MS = 3_000;

/**
 * The account's writes sent while its mirror's file is uploaded (decisions K.6's race): one
 * after another, a few hundred ms apart, from the moment the upload is seen recorded in the table
 * (so that they come after its start) until the file's last line, which waits for the write in
 * hand. An attempt that ends early (a hang-up) pauses them; the next attempt takes them up again.
 */
class WritesAlongside {
  private loop: { stop: AbortController; done: Promise<void> } | undefined;
  private sent = 0;

  constructor(
    private readonly ctx: CatalogueContext,
    private readonly account: number,
    private readonly requestIdPrefix: string,
    private readonly plans: WritePlan[],
    private readonly into: CatalogueWrite[],
  ) {}

  /** The lines of one attempt of the upload. */
  async *lines(lines: readonly Buffer[]): AsyncGenerator<Buffer> {
    try {
      for (let i = 0; i < lines.length; i += 1) {
        if (i === lines.length - 1) await this.pause();
        yield lines[i]!;
        if (i === 0 && lines.length > 1) this.start();
      }
    } finally {
      await this.pause();
    }
  }

  private start(): void {
    if (this.loop !== undefined || this.plans.length === 0) return;
    const stop = new AbortController();
    const signal = AbortSignal.any([stop.signal, this.ctx.client.abort]);
    const done = (async () => {
      const seenBy = Date.now() + SEE_UPLOAD_WITHIN_MS;
      while (!signal.aborted && Date.now() < seenBy && !(await isUploading(this.ctx.sql, this.ctx.accountIds[this.account]!))) await pause(50, signal);
      while (!signal.aborted && this.plans.length > 0) {
        await pause(100 + Math.random() * 300, signal);
        if (signal.aborted) return;
        this.sent += 1;
        // note: not stopped mid-request: a write once sent is seen through to its answer.
        await sendWrite(this.ctx, this.account, `${this.requestIdPrefix}-r${this.sent}`, this.plans.shift()!, this.into);
      }
    })();
    this.loop = { stop, done };
  }

  /** Starts no more writes, and waits for the one in hand. */
  async pause(): Promise<void> {
    const loop = this.loop;
    if (loop === undefined) return;
    loop.stop.abort();
    await loop.done;
    this.loop = undefined;
  }
}

/**
 * Sends one mirror (NDJSON, `mode=mirror`) until it is answered 202, its lines trickled with the
 * writes of `plan.race` alongside, then reads it until it has ended (as the slow uploads do) and
 * reads the account's rows at once: nothing else of the account runs then, so they are the
 * mirror's outcome. Logged in `log` before it is sent.
 */
export async function sendMirror(ctx: CatalogueContext, account: number, seq: number, plan: MirrorPlan, log: CatalogueOp[]): Promise<void> {
  const requestIdPrefix = `soak-cat${account}-${seq}`;
  const op: MirrorOp = { type: 'mirror', missing: plan.missing, maxRemoval: plan.maxRemoval, meant: plan.meant, lines: plan.lines, race: [], sentAt: Date.now(), requestIdPrefix };
  log.push(op);
  const lines = plan.lines.map((line) => Buffer.from(`${JSON.stringify({ ...catalogueListing(line), ...(line.valid ? {} : { price_cents: -1 }) })}\n`));
  const record: SlowUploadRecord = {
    client: account,
    seq,
    accountIndex: account,
    kind: 'listings',
    key: `${requestIdPrefix}-${randomUUID()}`,
    rows: lines.length,
    invalid: plan.lines.flatMap((line, index) => (line.valid ? [] : [index])),
    markerPrefix: requestIdPrefix,
    startedAtMs: 0,
    attempts: [],
  };
  ctx.uploads.records.push(record);
  const alongside = new WritesAlongside(ctx, account, requestIdPrefix, [...plan.race], op.race);
  await serveSlowUpload(ctx.uploads, record, {
    path: `/v1/api/imports?kind=listings&mode=mirror&missing=${plan.missing}&max_removal=${plan.maxRemoval}`,
    lines,
    pieces: () => alongside.lines(lines),
    // note: a file of some 50 lines arrives in 2-5 s, time for the writes alongside it.
    gapMs: () => 40 + Math.random() * 60,
  });
  await alongside.pause();
  op.end = record.end ?? 'interrupted';
  if (record.end !== 'answered' || record.importId === undefined) return;
  op.answeredAt = Date.now();
  op.importId = record.importId;
  await waitWritten(ctx.uploads, record);
  if (record.state !== 'completed') return;
  op.completedSeenAt = Date.now();
  op.after = await readCatalogue(ctx.sql, ctx.accountIds[account]!);
}
