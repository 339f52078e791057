import { describe, expect, it, vi } from 'vitest';
import { SecretBox } from '../../src/core/secret-box.ts';

const ROOT = Buffer.alloc(32, 9);

describe('SecretBox', () => {
  it('opens what it sealed, only for the same purpose and context, and refuses an altered value', () => {
    const box = new SecretBox(ROOT, 'webhook-secrets');
    const sealed = box.seal('whsec_abc', 'we_1');
    expect(sealed.startsWith('v1.')).toBe(true);
    expect(box.open(sealed, 'we_1')).toBe('whsec_abc');
    expect(() => box.open(sealed, 'we_2')).toThrow();
    expect(() => new SecretBox(ROOT, 'payment-providers').open(sealed, 'we_1')).toThrow();
    const raw = Buffer.from(sealed.slice(3), 'base64url');
    raw[raw.length - 1]! ^= 1;
    expect(() => box.open(`v1.${raw.toString('base64url')}`, 'we_1')).toThrow();
  });

  it('with remember, decrypts a value once and keeps the most recently used within the bound', () => {
    const box = new SecretBox(ROOT, 'webhook-secrets', { remember: 2 });
    const decrypt = vi.spyOn(box as unknown as { decrypt: (s: string, c: string) => string }, 'decrypt');
    const a = box.seal('secret a', 'we_a');
    const b = box.seal('secret b', 'we_b');
    const c = box.seal('secret c', 'we_c');
    expect(box.open(a, 'we_a')).toBe('secret a');
    expect(box.open(a, 'we_a')).toBe('secret a');
    expect(decrypt).toHaveBeenCalledTimes(1);
    box.open(b, 'we_b');
    box.open(a, 'we_a'); // a is now the most recently used: c pushes b out
    box.open(c, 'we_c');
    expect(decrypt).toHaveBeenCalledTimes(3);
    box.open(a, 'we_a');
    expect(decrypt).toHaveBeenCalledTimes(3);
    box.open(b, 'we_b');
    expect(decrypt).toHaveBeenCalledTimes(4);
  });

  it('with remember, still refuses a remembered value under another context, and opens a replaced secret afresh', () => {
    const box = new SecretBox(ROOT, 'webhook-secrets', { remember: 10 });
    const sealed = box.seal('old secret', 'we_1');
    expect(box.open(sealed, 'we_1')).toBe('old secret');
    expect(() => box.open(sealed, 'we_2')).toThrow();
    const replaced = box.seal('new secret', 'we_1');
    expect(box.open(replaced, 'we_1')).toBe('new secret');
  });
});
