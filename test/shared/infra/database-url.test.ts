import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { parseDatabaseUrl, withDatabase } from '../../../src/shared/infra/database-url.js';
import { ensureDatabase } from '../../../src/shared/infra/ensure-database.js';
import { databaseUrl } from '../../support/services.js';

describe('parseDatabaseUrl', () => {
  it.each([
    ['postgres://u@h1:5433,h2,[::1]:6000/app', [{ host: 'h1', port: 5433 }, { host: 'h2', port: 5432 }, { host: '::1', port: 6000 }], 'app'],
    ['postgresql://u:p%2Fw@db/My%20Base?sslmode=require', [{ host: 'db', port: 5432 }], 'My Base'],
    ['postgres://db', [{ host: 'db', port: 5432 }], ''],
  ])('reads %s', (url, hosts, database) => {
    expect(parseDatabaseUrl(url)).toEqual({ hosts, database });
  });
});

describe('withDatabase', () => {
  it.each([
    ['postgres://u:p%40w@h1:5433,[::1]:5434/app?target_session_attrs=primary', 'postgres', 'postgres://u:p%40w@h1:5433,[::1]:5434/postgres?target_session_attrs=primary'],
    ['postgresql://u@h1,h2', 'Ensure-Me 2', 'postgresql://u@h1,h2/Ensure-Me%202'],
    ['postgres://h1/app#x', 'other', 'postgres://h1/other#x'],
  ])('names another database in %s', (url, database, expected) => {
    expect(withDatabase(url, database)).toBe(expected);
    expect(parseDatabaseUrl(withDatabase(url, database)).database).toBe(database);
  });
});

describe('ensureDatabase with several hosts', () => {
  const admin = postgres(databaseUrl(inject('postgresUrl'), 'postgres'), { max: 1, onnotice: () => {} });
  const name = `${inject('runId')}_Multi-${randomBytes(3).toString('hex')}`;
  afterAll(async () => {
    await admin.unsafe(`drop database if exists "${name}"`);
    await admin.end();
  });

  it('creates the missing database on the live host when the first host is dead', async () => {
    const server = new URL(inject('postgresUrl'));
    // note: nothing listens on port 1; see db-socket.test.ts.
    const url = `postgres://postgres@127.0.0.1:1,${server.hostname}:${server.port || 5432}/${encodeURIComponent(name)}`;
    expect(await ensureDatabase(url)).toEqual({ created: true });
    expect(await admin`select 1 from pg_database where datname = ${name}`).toHaveLength(1);
    expect(await ensureDatabase(url)).toEqual({ created: false });
  });
});
