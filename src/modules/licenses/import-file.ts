import type { Principal } from '../../core/principal.ts';
import type { ImportLicenseInput } from './import-rules.ts';
import type { LicenseService } from './service.ts';

/**
 * Importing licenses from a file (docs/migrating.md): CSV or JSON rows become ImportLicenseInput,
 * checked all at once through LicenseService (every bad row reported with its line or index; a
 * file with any bad row imports nothing), then written through LicenseService.importLicenses in
 * batches, each one unit of work. Keys already in the account are skipped, so a re-run (after an
 * interruption, say) imports only what is missing.
 */
export type ImportFormat = 'csv' | 'json';

/** Where a row came from: a CSV line (1-based, the header is line 1) or a JSON array index (0-based). */
export type RowAt = { line: number } | { index: number };

export interface RowError {
  at: RowAt;
  key?: string;
  field?: string;
  message: string;
}

export interface ImportReport {
  ok: boolean;
  dryRun: boolean;
  rows: number;
  created: number;
  skipped: number;
  errors: RowError[];
}

interface Row {
  at: RowAt;
  input: ImportLicenseInput;
}

export const IMPORT_BATCH_SIZE = 1000;

const COLUMNS = ['key', 'productId', 'type', 'expiresAt', 'maxDevices', 'email', 'revoked', 'createdAt', 'devices'] as const;
/** Read but not imported: the owner is the account named on the command line. */
const IGNORED_COLUMNS = new Set(['userid']);

export async function importLicenseFile(
  licenses: LicenseService,
  principal: Principal,
  text: string,
  format: ImportFormat,
  options: { dryRun?: boolean; batchSize?: number } = {},
): Promise<ImportReport> {
  const dryRun = options.dryRun ?? false;
  const parsed = format === 'csv' ? parseCsvRows(text) : parseJsonRows(text);
  const report: ImportReport = { ok: false, dryRun, rows: parsed.rows.length, created: 0, skipped: 0, errors: parsed.errors };
  if (report.errors.length) return report;

  const verdicts = await licenses.checkImport(principal, parsed.rows.map((r) => r.input));
  verdicts.forEach((v, i) => {
    const { at, input } = parsed.rows[i]!;
    if (v.action === 'error') report.errors.push({ at, key: typeof input.key === 'string' ? input.key : undefined, field: v.issue.path, message: v.issue.message });
    else if (v.action === 'skip') report.skipped++;
    else report.created++;
  });
  if (report.errors.length) return { ...report, created: 0, skipped: 0 };
  if (dryRun) return { ...report, ok: true };

  report.created = report.skipped = 0;
  const size = options.batchSize ?? IMPORT_BATCH_SIZE;
  for (let i = 0; i < parsed.rows.length; i += size) {
    const batch = parsed.rows.slice(i, i + size);
    try {
      const outcome = await licenses.importLicenses(principal, batch.map((r) => r.input));
      report.created += outcome.created.length;
      report.skipped += outcome.skipped.length;
    } catch (error) {
      // Changed since the check (another import or a license created meanwhile): this batch rolled
      // back; the batches before it stay, and a re-run skips them.
      report.errors.push({ at: batch[0]!.at, message: `batch of ${batch.length} rows not imported: ${error instanceof Error ? error.message : String(error)}${issuesOf(error)}` });
      return report;
    }
  }
  return { ...report, ok: true };
}

const issuesOf = (error: unknown): string => {
  const issues = (error as { issues?: { path: string; message: string }[] }).issues;
  return issues?.length ? ` (${issues.slice(0, 5).map((i) => `${i.path} ${i.message}`).join('; ')})` : '';
};

/** A JSON array of objects: the License view's fields (as the API returns them), `activeDevices` or `devices`. */
export function parseJsonRows(text: string): { rows: Row[]; errors: RowError[] } {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return { rows: [], errors: [{ at: { index: 0 }, message: `not valid JSON: ${(error as Error).message}` }] };
  }
  if (!Array.isArray(data)) return { rows: [], errors: [{ at: { index: 0 }, message: 'the file must hold a JSON array of licenses' }] };
  const rows: Row[] = [];
  const errors: RowError[] = [];
  data.forEach((item: unknown, index) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) return errors.push({ at: { index }, message: 'must be an object' });
    const { activeDevices, devices, ...fields } = item as Record<string, unknown>;
    rows.push({ at: { index }, input: { ...fields, devices: (devices ?? activeDevices) as ImportLicenseInput['devices'] } as ImportLicenseInput });
  });
  return { rows, errors };
}

/**
 * CSV (RFC 4180) with a header row naming the columns (any order, any case): key, productId,
 * type, expiresAt, maxDevices, email, revoked, createdAt, devices (a JSON array in the cell,
 * quoted as CSV quotes any cell). Empty cells are absent values.
 */
export function parseCsvRows(text: string): { rows: Row[]; errors: RowError[] } {
  const { records, unterminatedAt } = parseCsv(text.replace(/^\uFEFF/, ''));
  const header = records.shift();
  if (!header) return { rows: [], errors: [{ at: { line: 1 }, message: 'the file is empty: a header row is required' }] };
  const byLower = new Map(COLUMNS.map((c) => [c.toLowerCase(), c]));
  const columns = header.cells.map((c) => c.trim().toLowerCase());
  const unknown = columns.filter((c) => !byLower.has(c) && !IGNORED_COLUMNS.has(c));
  if (unknown.length) return { rows: [], errors: [{ at: { line: 1 }, message: `unknown column(s) ${unknown.join(', ')}; the columns are ${COLUMNS.join(', ')}` }] };
  const rows: Row[] = [];
  const errors: RowError[] = [];
  for (const { line, cells } of records) {
    if (cells.length === 1 && cells[0]!.trim() === '') continue; // a blank line
    if (cells.length !== columns.length) {
      errors.push({ at: { line }, message: `has ${cells.length} cells; the header has ${columns.length}` });
      continue;
    }
    const raw: Record<string, string> = {};
    columns.forEach((c, i) => {
      const name = byLower.get(c);
      if (name && cells[i]!.trim() !== '') raw[name] = cells[i]!.trim();
    });
    const at = { line };
    const input = fromCsvCells(raw);
    if (input) rows.push({ at, input });
    else errors.push({ at, key: raw.key, field: 'devices', message: 'must be a JSON array of {identifier, name, activationDate}' });
  }
  if (unterminatedAt !== undefined) errors.push({ at: { line: unterminatedAt }, message: 'a quoted cell is never closed' });
  return { rows, errors };
}

/** The cells as the import's input (numbers and booleans parsed); undefined when the devices cell is not JSON. */
function fromCsvCells(raw: Record<string, string>): ImportLicenseInput | undefined {
  const input: Record<string, unknown> = { ...raw };
  if (raw.maxDevices !== undefined) input.maxDevices = /^\d{1,9}$/.test(raw.maxDevices) ? Number(raw.maxDevices) : raw.maxDevices;
  if (raw.revoked !== undefined) {
    const value = raw.revoked.toLowerCase();
    input.revoked = value === 'true' || value === '1' ? true : value === 'false' || value === '0' ? false : raw.revoked;
  }
  if (raw.devices !== undefined) {
    try {
      input.devices = JSON.parse(raw.devices);
    } catch {
      return undefined;
    }
  }
  return input as unknown as ImportLicenseInput;
}

/**
 * RFC 4180 records with the line each starts on; quoted cells may hold commas, quotes ("") and
 * line breaks. Cells are slices of the text, not built a character at a time (100,000 rows of
 * character-by-character strings held hundreds of megabytes of string fragments).
 */
export function parseCsv(text: string): { records: { line: number; cells: string[] }[]; unterminatedAt?: number } {
  const records: { line: number; cells: string[] }[] = [];
  let cells: string[] = [];
  let line = 1;
  let start = 1;
  let i = 0;
  while (i <= text.length) {
    let cell: string;
    if (text[i] === '"') {
      let end = i + 1;
      for (;;) {
        end = text.indexOf('"', end);
        if (end === -1) return { records, unterminatedAt: start };
        if (text[end + 1] !== '"') break;
        end += 2;
      }
      const raw = text.slice(i + 1, end);
      line += countLineBreaks(raw);
      cell = raw.replaceAll('""', '"');
      i = end + 1;
      // Anything between the closing quote and the separator is kept, as lenient parsers do.
      const next = nextSeparator(text, i);
      cell += text.slice(i, next);
      i = next;
    } else {
      const next = nextSeparator(text, i);
      cell = text.slice(i, next);
      i = next;
    }
    cells.push(cell);
    const ch = text[i];
    if (ch === ',') {
      i++;
      continue;
    }
    // End of a record: a line break or the end of the text.
    if (ch === '\r' && text[i + 1] === '\n') i++;
    i++;
    if (ch !== undefined || cells.length > 1 || cells[0] !== '') records.push({ line: start, cells });
    cells = [];
    start = ++line;
  }
  return { records };
}

function nextSeparator(text: string, from: number): number {
  for (let j = from; j < text.length; j++) {
    const ch = text.charCodeAt(j);
    if (ch === 44 /* , */ || ch === 10 /* \n */ || ch === 13 /* \r */) return j;
  }
  return text.length;
}

const countLineBreaks = (s: string): number => {
  let n = 0;
  for (let j = s.indexOf('\n'); j !== -1; j = s.indexOf('\n', j + 1)) n++;
  return n;
};
