import type postgres from 'postgres';
import { checkCatalogue, type CatalogueAccount } from './soak-catalogue-check.js';
import { entriesOf } from './soak-catalogue-log.js';
import type { SoakLog } from './soak-log.js';

/**
 * `--tamper` for the catalogue: archives by hand one row that a mirror left out and had to keep,
 * because a write sent while its file arrived wrote it (decisions K.6), and that nothing named
 * since. The check must then report exactly one wrong removal, naming that row.
 */
export async function tamperCatalogue(sql: postgres.Sql, accounts: readonly CatalogueAccount[], log: SoakLog): Promise<void> {
  const { keptByWritesDuringUpload: kept } = await checkCatalogue(sql, accounts);
  const namedSince = (account: CatalogueAccount, id: string, mirror: string) => {
    const at = account.log.findIndex((op) => op.requestIdPrefix === mirror);
    return account.log.slice(at + 1).some((op) => (op.type === 'mirror' ? op.lines.map((line) => line.id) : entriesOf(op).map((entry) => entry.id)).includes(id) || (op.type === 'mirror' && op.race.some((w) => entriesOf(w).some((entry) => entry.id === id))));
  };
  for (const row of [...kept].reverse()) {
    const account = accounts.find((a) => a.label === row.account)!;
    if (namedSince(account, row.id, row.mirror)) continue;
    const archived = await sql`update listings set archived_at = now(), updated_at = now() where account_id = ${account.id} and external_id = ${row.id} and archived_at is null`;
    if (archived.count !== 1) continue;
    log.note(`tampered: archived ${row.account} ${row.id}, which mirror ${row.mirror} had to keep`);
    return;
  }
  throw new Error('--tamper needs a catalogue row a mirror kept because a write sent during its upload wrote it, named by nothing since');
}
