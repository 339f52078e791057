import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { openStore } from './src/storage/index.ts';
const store = await openStore({ dataDir: mkdtempSync(join(tmpdir(), 'dbg')) });
const db = store.db as any;
console.log(await store.read.all(sql`select name from sqlite_master where name like '%search%'`.compile(db) as any).catch(e=>String(e)));
const acc = await db.insertInto('accounts').values({id:'a1', email:'x@y.z', password_hash:'h', created_at:1}).execute().catch((e:any)=>console.log(String(e)));
