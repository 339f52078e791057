import { createHash, randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import QRCode from 'qrcode';
import { AppError, invalidRequest } from '../../core/errors.ts';
import { randomBase62 } from '../../core/ids.ts';
import type { SecretBox } from '../../core/secret-box.ts';
import type { Unit, UnitRunner } from '../../core/unit-of-work.ts';
import type { TeamLog } from '../members/team-log.ts';

const PERIOD_S = 30;
export const RECOVERY_CODE_COUNT = 10;
export const CHALLENGE_VALIDITY_MS = 5 * 60_000;
/** Codes tried per password accepted: past this the sign-in starts again from the password (which has its own limits). */
export const CHALLENGE_ATTEMPTS = 5;

export interface TwoFactorRecord {
  memberId: string;
  accountId: string;
  secretSealed: string;
  enabledAt: number | null;
  lastStep: number | null;
  createdAt: number;
}

export interface Challenge {
  accountId: string;
  memberId: string;
  attempts: number;
  expiresAt: number;
}

export interface TwoFactorRepository {
  find(memberId: string): Promise<TwoFactorRecord | undefined>;
  /** Replaces the member's record (a new enrolment starts over) and drops their recovery codes. */
  replace(unit: Unit, record: TwoFactorRecord): Promise<void>;
  /** Enables a pending enrolment and stores its recovery codes' hashes; false when it changed meanwhile. */
  enable(unit: Unit, memberId: string, secretSealed: string, step: number, at: number, codeHashes: string[]): Promise<boolean>;
  /** Accepts a time step once: false when this step (or a later one) was used already. */
  useStep(unit: Unit, memberId: string, step: number): Promise<boolean>;
  /** Uses a recovery code once: false when unknown or used. */
  useRecoveryCode(unit: Unit, memberId: string, codeHash: string, at: number): Promise<boolean>;
  unusedRecoveryCodes(memberId: string): Promise<number>;
  delete(unit: Unit, memberId: string): Promise<void>;
  isRequired(accountId: string): Promise<boolean>;
  setRequired(unit: Unit, accountId: string, required: boolean, at: number): Promise<void>;
  insertChallenge(unit: Unit, tokenHash: string, challenge: Challenge): Promise<void>;
  /** Counts one attempt on a live challenge and returns it (attempts included); undefined when dead or used up. */
  attemptChallenge(unit: Unit, tokenHash: string, now: number, maxAttempts: number): Promise<Challenge | undefined>;
  deleteChallenge(unit: Unit, tokenHash: string): Promise<void>;
}

export interface Enrolment {
  /** Base32, for typing into an app by hand. */
  secret: string;
  uri: string;
  /** The otpauth URI as a QR code, an inline SVG (the pages' CSP allows no data: images). */
  qrSvg: string;
}

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');
/** A recovery code as typed: case, spaces and dashes do not matter. */
const normalizeRecovery = (code: string) => code.replace(/[\s-]/g, '').toLowerCase();
const newRecoveryCode = () => {
  const raw = randomBase62(10).toLowerCase();
  return `${raw.slice(0, 5)}-${raw.slice(5)}`;
};

/**
 * Two-factor sign-in (RFC 6238 TOTP, 6 digits, 30 s, SHA-1: what every authenticator app reads),
 * per member: enrolment by QR code, 10 single-use recovery codes shown once and stored as SHA-256
 * hashes, each TOTP step accepted once, and an owner's switch that requires it for the account.
 * The secret is sealed with SECRET_KEY at rest.
 */
export class TwoFactorService {
  constructor(
    private readonly repo: TwoFactorRepository,
    private readonly units: UnitRunner,
    private readonly secrets: SecretBox,
    private readonly log: TeamLog,
    private readonly clock: () => number = Date.now,
  ) {}

  async isEnabled(memberId: string): Promise<boolean> {
    return (await this.repo.find(memberId))?.enabledAt != null;
  }

  isRequired(accountId: string): Promise<boolean> {
    return this.repo.isRequired(accountId);
  }

  /**
   * An owner's switch; to turn it on, they use two-factor sign-in themselves (no one requires what
   * they skip). A change goes into the team's log with the owner who made it.
   */
  async setRequired(owner: { id: string; accountId: string; email: string }, required: boolean): Promise<void> {
    const accountId = owner.accountId;
    if (required && !(await this.isEnabled(owner.id))) throw invalidRequest('required', 'turn on your own two-factor sign-in first');
    const before = await this.isRequired(accountId);
    await this.units.run(async (unit) => {
      await this.repo.setRequired(unit, accountId, required, this.clock());
      if (before !== required) {
        await this.log.record(unit, { accountId, actor: { type: 'dashboard_user', userId: owner.id, email: owner.email } }, 'two_factor.requirement_changed', { required: { from: before, to: required } });
      }
    });
  }

  unusedRecoveryCodes(memberId: string): Promise<number> {
    return this.repo.unusedRecoveryCodes(memberId);
  }

  /** A new secret, pending until a code from it is confirmed; an enabled one stays until then too. */
  async start(member: { id: string; accountId: string; email: string }): Promise<Enrolment> {
    if (await this.isEnabled(member.id)) throw new AppError('invalid_request', 'Two-factor sign-in is on already.');
    const secret = new Secret({ size: 20 });
    const now = this.clock();
    const record: TwoFactorRecord = { memberId: member.id, accountId: member.accountId, secretSealed: this.secrets.seal(secret.base32, member.id), enabledAt: null, lastStep: null, createdAt: now };
    await this.units.run((unit) => this.repo.replace(unit, record));
    return this.enrolment(member.email, secret.base32);
  }

  /** The pending enrolment's QR code again (the page is shown again after a wrong code). */
  async pending(member: { id: string; email: string }): Promise<Enrolment | undefined> {
    const record = await this.repo.find(member.id);
    if (!record || record.enabledAt !== null) return undefined;
    return this.enrolment(member.email, this.secrets.open(record.secretSealed, member.id));
  }

  /** Turns it on with a code from the app: the 10 recovery codes, shown once. */
  async confirm(memberId: string, code: string): Promise<string[]> {
    const record = await this.repo.find(memberId);
    if (!record || record.enabledAt !== null) throw new AppError('invalid_request', 'Start the set-up again.');
    const step = this.matchingStep(this.secrets.open(record.secretSealed, memberId), code);
    if (step === undefined) throw invalidRequest('code', 'is not the code your app shows now');
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
    const enabled = await this.units.run((unit) => this.repo.enable(unit, memberId, record.secretSealed, step, this.clock(), codes.map((c) => sha256(normalizeRecovery(c)))));
    if (!enabled) throw new AppError('invalid_request', 'Start the set-up again.');
    return codes;
  }

  /** Turns it off, with a current code or a recovery code; not while the account requires it. */
  async disable(member: { id: string; accountId: string }, code: string): Promise<void> {
    if (await this.isRequired(member.accountId)) throw new AppError('invalid_request', 'This account requires two-factor sign-in.', [{ path: 'code', message: 'two-factor sign-in is required here' }]);
    if (!(await this.verify(member.id, code))) throw invalidRequest('code', 'is not right');
    await this.units.run((unit) => this.repo.delete(unit, member.id));
  }

  /** A removed member's two-factor data goes with them. */
  forget(unit: Unit, memberId: string): Promise<void> {
    return this.repo.delete(unit, memberId);
  }

  /** A password was accepted for a member with two-factor on: the challenge's secret (its cookie's value). */
  async challenge(accountId: string, memberId: string): Promise<string> {
    const token = randomBytes(32).toString('base64url');
    const challenge: Challenge = { accountId, memberId, attempts: 0, expiresAt: this.clock() + CHALLENGE_VALIDITY_MS };
    await this.units.run((unit) => this.repo.insertChallenge(unit, sha256(token), challenge));
    return token;
  }

  /**
   * A code for a challenge: the member when right (the challenge is used up), 'wrong' while
   * attempts remain, 'dead' when the challenge is unknown, expired or out of attempts.
   */
  async answer(token: string, code: string): Promise<{ accountId: string; memberId: string } | 'wrong' | 'dead'> {
    const hash = sha256(token);
    const challenge = await this.units.run((unit) => this.repo.attemptChallenge(unit, hash, this.clock(), CHALLENGE_ATTEMPTS));
    if (!challenge) return 'dead';
    if (!(await this.verify(challenge.memberId, code))) return challenge.attempts >= CHALLENGE_ATTEMPTS ? 'dead' : 'wrong';
    await this.units.run((unit) => this.repo.deleteChallenge(unit, hash));
    return { accountId: challenge.accountId, memberId: challenge.memberId };
  }

  /** A current TOTP code (each step once) or an unused recovery code (once). */
  private async verify(memberId: string, rawCode: string): Promise<boolean> {
    const record = await this.repo.find(memberId);
    if (!record || record.enabledAt === null) return false;
    const code = rawCode.trim();
    if (/^\d{6}$/.test(code.replace(/\s/g, ''))) {
      const step = this.matchingStep(this.secrets.open(record.secretSealed, memberId), code.replace(/\s/g, ''));
      return step !== undefined && (await this.units.run((unit) => this.repo.useStep(unit, memberId, step)));
    }
    const recovery = normalizeRecovery(code);
    if (!/^[a-z0-9]{10}$/.test(recovery)) return false;
    return this.units.run((unit) => this.repo.useRecoveryCode(unit, memberId, sha256(recovery), this.clock()));
  }

  /** The time step a code belongs to, within one step of now (clock drift), or undefined. */
  private matchingStep(base32: string, code: string): number | undefined {
    const totp = new TOTP({ secret: Secret.fromBase32(base32), digits: 6, period: PERIOD_S, algorithm: 'SHA1' });
    const now = this.clock();
    const delta = totp.validate({ token: code, timestamp: now, window: 1 });
    return delta === null ? undefined : Math.floor(now / 1000 / PERIOD_S) + delta;
  }

  private async enrolment(email: string, base32: string): Promise<Enrolment> {
    const uri = new TOTP({ issuer: 'Tessera', label: email, secret: Secret.fromBase32(base32), digits: 6, period: PERIOD_S, algorithm: 'SHA1' }).toString();
    const qrSvg = await QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
    return { secret: base32, uri, qrSvg };
  }
}
