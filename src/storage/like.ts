import { type RawBuilder, sql } from 'kysely';

/** `text` as a LIKE pattern matching any value that contains it: its own % _ and \ match only themselves. */
export const containsPattern = (text: string): string => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * `column LIKE '%text%'` with an explicit escape character (SQLite has none by default, PostgreSQL
 * has \). Case: SQLite's LIKE ignores ASCII case, PostgreSQL's does not; callers compare lower-case text.
 */
export const likeContains = (column: string, text: string): RawBuilder<boolean> => sql<boolean>`${sql.ref(column)} LIKE ${containsPattern(text)} ESCAPE '\\'`;

/**
 * The SQL function (one argument) the SQLite store defines on its connection: text lower-cased as
 * JavaScript's toLowerCase does, all of Unicode. SQLite's own lower() folds ASCII only, while its
 * FTS5 index folds every script: the license search's row test uses this, so that a walk finds
 * what the index finds ("Ölaf" for "ölaf").
 */
export const SQLITE_LOWER = 'tessera_lower';
