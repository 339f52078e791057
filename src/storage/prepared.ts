import { createHash } from 'node:crypto';
import type { Compilable } from 'kysely';
import type { BoundQuery } from './store.ts';

const MARK = '\u0000param:';

/**
 * A hot-path statement built once with Kysely and bound per call: no query building or
 * compilation per request. `prepare((p) => db.selectFrom('t').where('k', '=', p('key')))`
 * compiles with named markers, then `bind({key})` puts the values in their positions.
 */
export class Prepared<P extends Record<string, unknown>, R> {
  private readonly sql: string;
  private readonly order: (keyof P)[];
  private readonly name: string;

  constructor(build: (param: <K extends keyof P & string>(name: K) => P[K]) => Compilable<R>) {
    const compiled = build(((name: string) => `${MARK}${name}`) as never).compile();
    this.sql = compiled.sql;
    this.order = compiled.parameters.map((value) => {
      if (typeof value !== 'string' || !value.startsWith(MARK)) {
        throw new Error(`Prepared statements take only named parameters: ${compiled.sql}`);
      }
      return value.slice(MARK.length) as keyof P;
    });
    this.name = `t_${createHash('sha1').update(this.sql).digest('hex').slice(0, 16)}`;
  }

  bind(params: P): BoundQuery<R> {
    const parameters = this.order.map((key) => params[key]);
    return { sql: this.sql, parameters, name: this.name };
  }
}
