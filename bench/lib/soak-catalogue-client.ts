import { sendMirror } from './soak-catalogue-mirror.js';
import { pause } from './pause.js';
import { CatalogueIds, nextWrite, planMirror, seedPlan, type MirrorPlan } from './soak-catalogue-plan.js';
import { readCatalogue } from './soak-catalogue-tables.js';
import { sendWrite, type CatalogueContext } from './soak-catalogue-write.js';

/**
 * The mirrors a client sends, in turn: removals done (archived, then deleted) and removals the
 * guard must hold. Each account starts at another place in the turn, so that every kind runs
 * from the first minute.
 */
const MIRROR_TURN: readonly (Pick<MirrorPlan, 'meant' | 'missing'>)[] = [
  { meant: 'done', missing: 'archive' },
  { meant: 'done', missing: 'delete' },
  { meant: 'held', missing: 'archive' },
  { meant: 'done', missing: 'archive' },
  { meant: 'done', missing: 'delete' },
  { meant: 'held', missing: 'delete' },
];

/**
 * The catalogue client of one account, until the load stops: it seeds the catalogue with 50
 * listings, then, again and again, sends one to three writes (upserts, merges, archives, deletes by
 * `external_id`) and a mirror, each once the one before is answered (a mirror once it is
 * completed), choosing each from the account's rows as they stand. Everything it sends goes to
 * the account's log, which the check replays.
 */
export async function runCatalogueClient(ctx: CatalogueContext, account: number): Promise<void> {
  const stopOrAbort = AbortSignal.any([ctx.client.stop, ctx.client.abort]);
  const ids = new CatalogueIds(`cat${account}`);
  const log = ctx.logs[account]!;
  const accountId = ctx.accountIds[account]!;
  const rest = () => pause(ctx.client.pauseMs * (0.5 + Math.random()), stopOrAbort);
  let seq = 1;
  await sendWrite(ctx, account, `soak-cat${account}-${seq}`, seedPlan(ids, Math.random), log);
  for (let turn = account; !stopOrAbort.aborted; turn += 1) {
    for (let w = 1 + Math.floor(Math.random() * 3); w > 0 && !stopOrAbort.aborted; w -= 1) {
      await rest();
      seq += 1;
      await sendWrite(ctx, account, `soak-cat${account}-${seq}`, nextWrite(await readCatalogue(ctx.sql, accountId), ids, Math.random), log);
    }
    if (stopOrAbort.aborted) return;
    await rest();
    seq += 1;
    const { meant, missing } = MIRROR_TURN[turn % MIRROR_TURN.length]!;
    await sendMirror(ctx, account, seq, planMirror(await readCatalogue(ctx.sql, accountId), ids, meant, missing, Math.random), log);
  }
}
