import type postgres from 'postgres';
import { CATALOGUE_PROBLEMS, newFindings, type CatalogueFindings, type CatalogueProblem } from './soak-catalogue-findings.js';
import type { CatalogueOp, MirrorFacts, TableRow } from './soak-catalogue-log.js';
import { AccountModel } from './soak-catalogue-model.js';
import { readCatalogue, readMirrorFacts } from './soak-catalogue-tables.js';

/** One catalogue account: its id, how the findings name it, and its client's log. */
export interface CatalogueAccount {
  id: string;
  label: string;
  log: readonly CatalogueOp[];
}

/**
 * Replays one account's log in its model (soak-catalogue-model.ts), each mirror with the import
 * the table recorded of it (one of its attempts' `X-Request-Id: <prefix>-a<n>`), comparing the
 * model with the rows after each mirror and with `table` at the end. Each mirror of the log must
 * be at most one import, and every mirror import of the account one of the log's.
 */
export function replayAccount(account: Omit<CatalogueAccount, 'id'>, facts: readonly MirrorFacts[], table: ReadonlyMap<string, TableRow>, findings: CatalogueFindings): void {
  const claimed = new Set<string>();
  const model = new AccountModel(account.label, findings);
  model.replay(account.log, (op) => {
    const kept = facts.filter((f) => f.requestId.startsWith(`${op.requestIdPrefix}-a`));
    for (const f of kept) claimed.add(f.importId);
    if (kept.length > 1) findings.wrongMirrors.push(`${account.label} mirror ${op.requestIdPrefix}: kept as ${kept.length} imports (${kept.map((f) => f.importId).join(', ')})`);
    return kept[0];
  });
  for (const f of facts) if (!claimed.has(f.importId)) findings.wrongMirrors.push(`${account.label}: a mirror import no mirror of the log sent, ${f.importId} (request ${f.requestId})`);
  model.compare(table, 'at the end');
}

/** The check of every catalogue account against its tables as they are now. */
export async function checkCatalogue(sql: postgres.Sql, accounts: readonly CatalogueAccount[]): Promise<CatalogueFindings> {
  const findings = newFindings();
  for (const account of accounts) replayAccount(account, await readMirrorFacts(sql, account.id), await readCatalogue(sql, account.id), findings);
  return findings;
}

/** Each problem's count and first lines, as the summary gives them. */
export function problemReport(findings: CatalogueFindings, first: number): Record<CatalogueProblem, { count: number; first: string[] }> {
  return Object.fromEntries((Object.keys(CATALOGUE_PROBLEMS) as CatalogueProblem[]).map((problem) => [problem, { count: findings[problem].length, first: findings[problem].slice(0, first) }])) as Record<
    CatalogueProblem,
    { count: number; first: string[] }
  >;
}
