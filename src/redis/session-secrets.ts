/**
 * The namespace's session secrets: session keys are stored as keyed hashes
 * (`HMAC-SHA-256(secret, key)`), so a dump of the server cannot confirm a guessed routing key.
 *
 * - **Given** (`sessionSecret`): every router of the namespace is given the same secrets; the
 *   first keys new sessions, the others are read too. Nothing of them is stored. To rotate,
 *   give `[new, old]` to every router, then `[new]` once the old sessions' TTL has passed.
 * - **Generated** (the default): the first router that needs a secret proposes a random one, and
 *   the script stores it only if the namespace has none (`{ns}:session-secret`: `id`, `key`, and
 *   after a rotation `previous`); every router reads the stored one, so all agree whoever came
 *   first. Each session call carries the secret's `id`: a router whose id is no longer the
 *   stored one (a rotation, `clear()`, a server restarted empty) is told so in the same round
 *   trip, reads the secret again and repeats the call. A rotation keeps the current key as
 *   `previous`, still read, so sessions survive one rotation.
 *
 * @module
 * @internal
 */
import { createHmac, randomBytes } from 'node:crypto';
import { FleetRouteError, invalidArgument } from '../core/errors.js';
import { isWellFormed } from '../core/options.js';

/** @internal What the session scripts answer when the caller's secret id is not the stored one. */
export const STALE_SECRET = '~secret';

/** @internal The secrets in use: `id` (empty when given), and the keys, current first. */
export interface SecretSet {
  readonly id: string;
  readonly keys: readonly Buffer[];
}

/** @internal The shortest given secret (characters). */
export const MIN_SECRET_LENGTH = 16;

/**
 * @internal Reads the `sessionSecret` option: a secret, or a list of one to four, each of 16 …
 * 1,024 characters. An error never quotes a secret.
 */
export function readSessionSecrets(field: string, value: unknown): readonly string[] {
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list) || list.length === 0 || list.length > 4)
    throw invalidArgument(
      `${field} must be a secret, or a list of one to four (the first keys new sessions), got ${shape(value)}`,
    );
  return Object.freeze(
    list.map((secret: unknown, i) => {
      if (
        typeof secret !== 'string' ||
        secret.length < MIN_SECRET_LENGTH ||
        secret.length > 1024 ||
        !isWellFormed(secret)
      )
        throw invalidArgument(
          `${field}[${i}] must be a well-formed string of ${MIN_SECRET_LENGTH} to 1024 characters, got ${shape(secret)}`,
        );
      return secret;
    }),
  );
}

/** What a rejected secret was, without its content. */
function shape(value: unknown): string {
  if (typeof value === 'string') return `a string of ${value.length} characters`;
  if (Array.isArray(value)) return `a list of ${value.length}`;
  return value === null ? 'null' : typeof value;
}

/** @internal The name a session key is stored under, keyed by `secret`. Cost: one HMAC. */
export function keyedName(secret: Buffer, key: string): string {
  return `s:${createHmac('sha256', secret).update(key).digest('hex').slice(0, 32)}`;
}

/**
 * @internal The secrets of one store: given ones, or the namespace's generated one, read (and
 * created when missing) through `fetch(proposal, rotate)` — one script call — on first use and
 * whenever a session call says the stored one changed. Calls that need it while it is read wait
 * for that one read.
 */
export class SessionSecrets {
  readonly #given: SecretSet | undefined;
  readonly #fetch: (id: string, key: string, rotate: boolean) => Promise<unknown>;
  #current: SecretSet | undefined;
  #reading: Promise<SecretSet> | undefined;

  constructor(
    given: readonly string[] | undefined,
    fetch: (id: string, key: string, rotate: boolean) => Promise<unknown>,
  ) {
    this.#given =
      given === undefined
        ? undefined
        : { id: '', keys: given.map((secret) => Buffer.from(secret, 'utf8')) };
    this.#current = this.#given;
    this.#fetch = fetch;
  }

  /** The secrets to key a call with: known ones at once, else read from the store. */
  get(): SecretSet | Promise<SecretSet> {
    return this.#current ?? this.#read(false);
  }

  /**
   * A session call answered {@link STALE_SECRET} for `used`: reads the stored secret again (once
   * for every call that saw the same stale one).
   *
   * @throws {@link FleetRouteError} `TRANSPORT_FAILED` for given secrets (a script never answers
   *   that to them).
   */
  stale(used: SecretSet): Promise<SecretSet> {
    if (this.#given !== undefined) throw badSecret('a stale secret for a given one');
    if (this.#current !== used && this.#current !== undefined)
      return Promise.resolve(this.#current);
    this.#current = undefined;
    return this.#read(false);
  }

  /**
   * Replaces the namespace's generated secret with a new one; the current one stays readable as
   * `previous`.
   *
   * @throws (rejects) {@link FleetRouteError} `INVALID_ARGUMENT` when the secrets were given.
   */
  async rotate(): Promise<void> {
    if (this.#given !== undefined)
      throw invalidArgument(
        'rotateSessionSecret needs a generated secret: a given sessionSecret rotates through the option',
      );
    this.#current = undefined;
    this.#reading = undefined;
    await this.#read(true);
  }

  #read(rotate: boolean): Promise<SecretSet> {
    if (this.#reading !== undefined && !rotate) return this.#reading;
    const reading = this.#fetch(
      randomBytes(8).toString('hex'),
      randomBytes(32).toString('hex'),
      rotate,
    ).then(
      (reply) => {
        const set = secretsOf(reply);
        if (this.#reading === reading) {
          this.#current = set;
          this.#reading = undefined;
        }
        return set;
      },
      (error: unknown) => {
        if (this.#reading === reading) this.#reading = undefined;
        throw error;
      },
    );
    this.#reading = reading;
    return reading;
  }
}

const HEX_KEY = /^[0-9a-f]{64}$/;

/** The script's answer `{id, key, previous}`, checked: it comes from the server. */
function secretsOf(reply: unknown): SecretSet {
  if (!Array.isArray(reply) || reply.length !== 3) throw badSecret('an unexpected reply');
  const [id, key, previous] = reply.map(String) as [string, string, string];
  if (id.length === 0 || id.length > 64 || !HEX_KEY.test(key)) throw badSecret('an invalid secret');
  const keys = [Buffer.from(key, 'hex')];
  if (HEX_KEY.test(previous)) keys.push(Buffer.from(previous, 'hex'));
  return { id, keys };
}

function badSecret(what: string): FleetRouteError {
  return new FleetRouteError('TRANSPORT_FAILED', `Redis answered the session secret with ${what}`);
}
