/**
 * `RedisSharedStore`: a {@link SharedStore} on Redis (or Valkey), one `EVALSHA` per call.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { withDeadline } from '../core/bounded-wait.js';
import { FleetRouteError } from '../core/errors.js';
import { callback, custom, duration, OptionTable } from '../core/option-table.js';
import { fail, readObject, readString } from '../core/options.js';
import type {
  LoadEntry,
  LoadSync,
  LoadSyncReply,
  PrefixHolder,
  SessionRecord,
  SharedStore,
} from '../shared/shared-store.js';
import { CLOCK_SLACK_MS, MAX_SHARED_COUNT, MAX_STORED_URL } from '../shared/store-values.js';
import { loadIoRedis, type RedisClientLike } from './ioredis.js';
import {
  CLEAR,
  GET_SESSION,
  LEAVE,
  MATCH_PREFIX,
  PUT_SESSION,
  RECORD_PREFIX,
  SESSION_SECRET,
  SYNC_LOADS,
} from './scripts.js';
import {
  keyedName,
  readSessionSecrets,
  type SecretSet,
  SessionSecrets,
  STALE_SECRET,
} from './session-secrets.js';

/** Options of {@link RedisSharedStore.create}. @public */
export interface RedisSharedStoreOptions {
  /**
   * The server, as ioredis reads it (`redis://[user:password@]host:port/db`, `rediss://` for
   * TLS). Ignored when `client` is given. @defaultValue 'redis://127.0.0.1:6379'
   */
  readonly url?: string;
  /**
   * ioredis options, passed through as they are (`password`, `username`, `tls`, `db`,
   * `sentinels`, …) over the store's own: `lazyConnect`, `enableOfflineQueue: false` (a
   * command while disconnected fails at once, so nothing waits on a lost server),
   * `maxRetriesPerRequest: 0`, and reconnection every 100 ms doubling to 2 s. The store keeps
   * no credential of its own. @defaultValue none
   */
  readonly redis?: Readonly<Record<string, unknown>>;
  /**
   * A client you built (an ioredis `Redis`): the store uses it and never closes it. Give it
   * `enableOfflineQueue: false` so that a lost server fails commands at once. @defaultValue
   * none: the store builds its own from `url` and `redis`
   */
  readonly client?: RedisClientLike;
  /**
   * Every key starts with `{namespace}:`, so two fleets share one server without seeing each
   * other, and a namespace's keys share one Redis Cluster hash slot. @defaultValue 'fleetroute'
   */
  readonly namespace?: string;
  /**
   * Time source for heartbeats, session and prefix ages (ms). By default the server's clock
   * (`TIME`), so routers with skewed clocks agree; the simulator passes its own.
   * @defaultValue none: the server's clock
   */
  readonly clock?: () => number;
  /**
   * How long `create` waits for the first connection (ms). The store is usable either way: it
   * keeps reconnecting, and shared state stays degraded until it connects. @defaultValue 2000
   */
  readonly connectTimeoutMs?: number;
  /**
   * The secret session keys are keyed with (`HMAC-SHA-256`), so that a dump of the server cannot
   * confirm a guessed routing key; or a list of up to four, the first keying new sessions and
   * every one read (a rotation: give `[new, old]` to every router, then `[new]` once the old
   * sessions' TTL has passed). 16 to 1,024 characters each. Give every router of a namespace the
   * same. Without it, the first router that needs one generates a secret and keeps it in Redis
   * (`{namespace}:session-secret`), where every router reads it: it then protects a dump of the
   * session keys, not a dump of the whole server; {@link RedisSharedStore.rotateSessionSecret}
   * replaces it. @defaultValue none: one generated and kept in Redis
   */
  readonly sessionSecret?: string | readonly string[];
}

/** @internal The options of the Redis store. */
export const REDIS_STORE_OPTIONS = new OptionTable(
  'RedisSharedStore',
  'RedisSharedStoreOptions',
  {
    url: custom<string>('redis://127.0.0.1:6379', (field, value) => readString(field, value, 4096)),
    namespace: custom<string>('fleetroute', (field, value) => readNamespace(field, value)),
    clock: callback<() => number>('a function', undefined, "none: the server's clock"),
    connectTimeoutMs: duration(2000, 0),
    sessionSecret: custom<readonly string[] | undefined>(
      undefined,
      (field, value) => readSessionSecrets(field, value),
      'none: one generated and kept in Redis',
    ),
  },
  ['redis', 'client'],
);

interface Script {
  readonly source: string;
  readonly sha: string;
}

function script(source: string): Script {
  return { source, sha: createHash('sha1').update(source).digest('hex') };
}

const SCRIPTS = {
  sync: script(SYNC_LOADS),
  leave: script(LEAVE),
  getSession: script(GET_SESSION),
  putSession: script(PUT_SESSION),
  match: script(MATCH_PREFIX),
  record: script(RECORD_PREFIX),
  clear: script(CLEAR),
  secret: script(SESSION_SECRET),
} as const;

/**
 * The most other live routers a sync reads (the most recently synced): a fleet has tens; this
 * bounds the script's work whatever the namespace holds.
 */
const MAX_READ_ROUTERS = 1024;

/** The most fields of a router's load hash a sync reads: two per worker and the epoch. */
const MAX_ROUTER_FIELDS = 2 * 65_536 + 1;

/** The namespace's generated session secret (after the prefix). */
const SECRET_KEY = 'session-secret';

/**
 * Shared state on Redis 6.2+ or Valkey, through `ioredis` (an optional peer dependency:
 * `npm install ioredis`). Each call is one `EVALSHA` of a short Lua script; a restarted server
 * gets the script again by itself (`NOSCRIPT` → `EVAL`).
 *
 * Keys, all under `{namespace}:` (see docs/redis.md):
 * - `routers` — ZSET router id → last sync time; `load:<router id>` — HASH `l:<url>` /
 *   `p:<url>` → that router's in-flight / prefilling counts, and `~epoch`;
 * - `s:<hash>` — a session's workers, under a keyed hash of the routing key (never the key);
 *   `session-secret` — the namespace's generated secret of those hashes (none when given);
 * - `p:<hash>` — ZSET worker URL → last time it was sent the prefix block (block hashes only,
 *   never prompt text).
 *
 * @example
 * ```ts
 * import { RedisSharedStore } from 'fleetroute/redis';
 * const store = await RedisSharedStore.create({ url: 'redis://10.0.0.5:6379', namespace: 'prod' });
 * const router = new Router({ registry, transport, shared: new SharedState({ store }) });
 * // …
 * await router.close();
 * await store.close();
 * ```
 * @public
 */
export class RedisSharedStore implements SharedStore {
  readonly kind = 'redis';
  readonly #client: RedisClientLike;
  readonly #owned: boolean;
  readonly #prefix: string;
  readonly #clock: (() => number) | undefined;
  readonly #secrets: SessionSecrets;
  /** The client's last connection error, until it is ready again (built clients only). */
  #lastError: Error | undefined;
  #closed = false;

  private constructor(
    client: RedisClientLike,
    owned: boolean,
    prefix: string,
    own: {
      readonly clock: (() => number) | undefined;
      readonly sessionSecret: readonly string[] | undefined;
    },
  ) {
    this.#client = client;
    this.#owned = owned;
    this.#prefix = prefix;
    this.#clock = own.clock;
    this.#secrets = new SessionSecrets(own.sessionSecret, (id, key, rotate) =>
      this.#run(SCRIPTS.secret, 1, [prefix + SECRET_KEY, id, key, rotate ? '1' : '0']),
    );
  }

  /**
   * Builds a store: loads `ioredis`, connects (waiting at most `connectTimeoutMs`), and resolves
   * whether or not the server answered — a store not yet connected fails its calls at once, and
   * shared state routes on local state until it connects.
   *
   * @returns the store.
   * @throws (rejects) {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad option;
   *   `MISSING_DEPENDENCY` when `ioredis` is not installed (and no `client` was given).
   */
  static async create(options: RedisSharedStoreOptions = {}): Promise<RedisSharedStore> {
    const o = readObject('RedisSharedStore options', options);
    const own = REDIS_STORE_OPTIONS.read(o);
    const extra = readObject('redis', o.redis);
    const prefix = `{${own.namespace}}:`;
    if (o.client !== undefined) {
      const c = o.client as Partial<RedisClientLike> | null;
      if (typeof c !== 'object' || c === null || typeof c.evalsha !== 'function')
        fail('client', 'a Redis client (an ioredis Redis)', o.client);
      return new RedisSharedStore(o.client as RedisClientLike, false, prefix, own);
    }
    const { Redis } = await loadIoRedis();
    const client = new Redis(own.url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: (times: number) => Math.min(100 * 2 ** Math.min(times - 1, 5), 2000),
      ...extra,
    });
    const store = new RedisSharedStore(client, true, prefix, own);
    // A lost server is reported by shared state's observations; the client's own error events
    // (refused AUTH, a TLS mismatch, a refused connection) become the reason of the failures.
    client.on('error', (error: Error) => {
      store.#lastError = error;
    });
    client.on('ready', () => {
      store.#lastError = undefined;
    });
    const connecting = client.connect().then(
      () => true,
      () => false,
    );
    if (own.connectTimeoutMs > 0) await withDeadline(connecting, own.connectTimeoutMs);
    return store;
  }

  /** The client's state (`ready` when connected: ioredis's `status`). */
  get status(): string {
    return this.#client.status;
  }

  /** The key prefix, `{namespace}:`. */
  get prefix(): string {
    return this.#prefix;
  }

  async syncLoads(sync: LoadSync): Promise<LoadSyncReply> {
    const args: (string | number)[] = [
      this.#prefix,
      this.#now(),
      sync.routerId,
      sync.liveMs,
      sync.epoch,
      sync.full ? '1' : '0',
      MAX_SHARED_COUNT,
      2 + MAX_STORED_URL,
      CLOCK_SLACK_MS,
      MAX_READ_ROUTERS,
      MAX_ROUTER_FIELDS,
      sync.entries.length,
    ];
    for (const e of sync.entries) args.push(e.url, e.load, e.prefilling);
    const reply = await this.#run(SCRIPTS.sync, 1, args);
    if (!Array.isArray(reply) || reply.length < 3) throw badReply('syncLoads');
    const byUrl = new Map<string, { load: number; prefilling: number }>();
    for (let i = 3; i + 1 < reply.length; i += 2) {
      const field = String(reply[i]);
      const value = Number(reply[i + 1]);
      if (!(value > 0)) continue;
      const url = field.slice(2);
      let entry = byUrl.get(url);
      if (entry === undefined) {
        entry = { load: 0, prefilling: 0 };
        byUrl.set(url, entry);
      }
      if (field.startsWith('l:')) entry.load = value;
      else if (field.startsWith('p:')) entry.prefilling = value;
    }
    const loads: LoadEntry[] = [];
    for (const [url, e] of byUrl)
      if (e.load > 0) loads.push({ url, load: e.load, prefilling: e.prefilling });
    return {
      accepted: Number(reply[0]) === 1,
      routers: Number(reply[1]),
      loads,
      ignored: Number(reply[2]),
    };
  }

  async leave(routerId: string): Promise<void> {
    await this.#run(SCRIPTS.leave, 1, [this.#prefix, routerId]);
  }

  async getSession(key: string): Promise<SessionRecord | undefined> {
    const reply = await this.#keyed(SCRIPTS.getSession, (set) => {
      const names = set.keys.map((secret) => this.#prefix + keyedName(secret, key));
      return [
        [this.#prefix + SECRET_KEY, ...names],
        [set.id, 2 * MAX_STORED_URL + 1],
      ];
    });
    if (reply === null || reply === undefined) return undefined;
    if (!Array.isArray(reply) || reply.length < 2) throw badReply('getSession');
    // As stored (shared state checks it): `primary`, or `primary\nsecondary`.
    const value = String(reply[0]);
    const cut = value.indexOf('\n');
    const ttlLeftMs = Number(reply[1]);
    return cut < 0
      ? { primary: value, ttlLeftMs }
      : { primary: value.slice(0, cut), secondary: value.slice(cut + 1), ttlLeftMs };
  }

  async putSession(
    key: string,
    primary: string,
    secondary: string | undefined,
    ttlMs: number,
  ): Promise<void> {
    const value = secondary === undefined ? primary : `${primary}\n${secondary}`;
    const ttl = Math.max(1, Math.round(ttlMs));
    await this.#keyed(SCRIPTS.putSession, (set) => [
      [this.#prefix + SECRET_KEY, this.#prefix + keyedName(set.keys[0]!, key)],
      [set.id, value, ttl],
    ]);
  }

  /**
   * Replaces the namespace's generated session secret with a new one (every router notices on
   * its next session call). Sessions written under the one replaced stay readable until the next
   * rotation; a session is written again under the new secret when its placement changes or a
   * quarter of its TTL is left.
   *
   * @returns when the new secret is stored. Cost: one round trip.
   * @throws (rejects) {@link FleetRouteError} `INVALID_ARGUMENT` when the store was given
   *   `sessionSecret` (rotate it through the option); `CLOSED` after `close()`; the client's
   *   error when Redis does not answer.
   */
  rotateSessionSecret(): Promise<void> {
    return this.#secrets.rotate();
  }

  async matchPrefix(
    blocks: readonly string[],
    ttlMs: number,
    maxHolders: number,
  ): Promise<readonly PrefixHolder[]> {
    if (blocks.length === 0) return [];
    const args: (string | number)[] = blocks.map((b) => this.#prefix + b);
    args.push(this.#now(), ttlMs, maxHolders, MAX_STORED_URL, CLOCK_SLACK_MS);
    const reply = await this.#run(SCRIPTS.match, blocks.length, args);
    if (!Array.isArray(reply)) throw badReply('matchPrefix');
    // As the script answers them (shared state checks them): holders, then odd members.
    const out: PrefixHolder[] = [];
    for (let i = 0; i + 2 < reply.length; i += 3)
      out.push({
        url: String(reply[i]),
        blocks: Number(reply[i + 1]),
        ageMs: Number(reply[i + 2]),
      });
    return out;
  }

  async recordPrefix(
    blocks: readonly string[],
    url: string,
    ttlMs: number,
    maxHolders: number,
  ): Promise<void> {
    if (blocks.length === 0) return;
    const args: (string | number)[] = blocks.map((b) => this.#prefix + b);
    args.push(this.#now(), url, Math.max(1, Math.round(ttlMs)), maxHolders, CLOCK_SLACK_MS);
    await this.#run(SCRIPTS.record, blocks.length, args);
  }

  /**
   * Deletes every key of the namespace (`SCAN` + `UNLINK`, 500 keys per round trip): every
   * router's loads, every session, the whole prefix index. For tests, simulations and a fleet
   * being retired; routers still running rebuild their loads on their next sync.
   *
   * @returns how many keys were deleted. Cost: O(keys in the server) scanned.
   */
  async clear(): Promise<number> {
    let deleted = 0;
    let cursor = '0';
    const pattern = `${escapeGlob(this.#prefix)}*`;
    for (let round = 0; round < 1_000_000; round++) {
      const reply = (await this.#run(SCRIPTS.clear, 0, [cursor, pattern])) as unknown[];
      if (!Array.isArray(reply) || reply.length < 2) throw badReply('clear');
      cursor = String(reply[0]);
      deleted += Number(reply[1]) || 0;
      if (cursor === '0') break;
    }
    return deleted;
  }

  /**
   * Closes the client the store built (`QUIT`, then a hard disconnect if the server does not
   * answer within a second); a client you passed in is left open. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (!this.#owned) return;
    const client = this.#client;
    try {
      await withDeadline(client.quit(), 1000);
    } catch {
      // Not connected: nothing to quit.
    } finally {
      client.disconnect();
    }
  }

  #now(): number | string {
    return this.#clock === undefined ? '' : this.#clock();
  }

  /**
   * Runs a session script keyed with the secrets in use (`call` gives its keys, then its other
   * arguments); when the namespace's generated secret changed meanwhile, reads it again and runs
   * the script once more.
   */
  async #keyed(
    s: Script,
    call: (set: SecretSet) => [readonly string[], readonly (string | number)[]],
  ): Promise<unknown> {
    let set = await this.#secrets.get();
    for (let attempt = 0; ; attempt++) {
      const [keys, args] = call(set);
      const reply = await this.#run(s, keys.length, [...keys, ...args]);
      if (!Array.isArray(reply) || reply.length !== 1 || reply[0] !== STALE_SECRET) return reply;
      if (attempt > 0) throw badReply('a session call (its secret changed twice)');
      set = await this.#secrets.stale(set);
    }
  }

  /** Runs a script by its SHA, loading it when the server does not have it (a restart). */
  async #run(s: Script, keys: number, args: readonly (string | number)[]): Promise<unknown> {
    if (this.#closed) throw new FleetRouteError('CLOSED', 'the Redis store is closed');
    try {
      return await this.#client.evalsha(s.sha, keys, ...args);
    } catch (error) {
      if (error instanceof Error && error.message.startsWith('NOSCRIPT'))
        return await this.#client.eval(s.source, keys, ...args);
      const cause = this.#lastError;
      if (cause === undefined || this.#client.status === 'ready') throw error;
      throw new FleetRouteError(
        'TRANSPORT_FAILED',
        `Redis is not connected (${this.#client.status}): ${cause.message}`,
        { cause: error },
      );
    }
  }
}

function badReply(call: string): FleetRouteError {
  return new FleetRouteError('TRANSPORT_FAILED', `Redis answered ${call} with an unexpected reply`);
}

/** `text` with the glob characters of `SCAN MATCH` escaped. */
function escapeGlob(text: string): string {
  let out = '';
  for (const c of text)
    out += c === '*' || c === '?' || c === '[' || c === ']' || c === '\\' ? `\\${c}` : c;
  return out;
}

function readNamespace(field: string, value: unknown): string {
  const s = readString(field, value, 128);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // Braces would change the hash tag; control characters and spaces have no place in a key.
    if (c <= 0x20 || c === 0x7b || c === 0x7d || c === 0x7f)
      fail(field, 'a name without spaces, control characters or braces', value);
  }
  return s;
}
