/**
 * The registry's indexes: id → worker, url → id, model / type / connection → workers, and the
 * hash rings over them. Collections are cached as arrays that keep their identity until their
 * membership (or a member's revision) changes, so readers and policies may cache by identity.
 * Rings are built lazily on the first read after a change.
 *
 * The cached arrays are never mutated after they are handed out, but they are not
 * `Object.freeze`d: on Node 20 a frozen array is about four times slower to walk (≈ 4 ns per
 * element against ≈ 1 ns), and policies walk them on every request. Their `readonly` type is
 * the guard. Only the shared empty array is frozen: nothing ever indexes into it.
 *
 * @module
 * @internal
 */
import type { Hasher } from '../core/hash.js';
import { buildRing, type HashRing, type PointCache } from '../ring/hash-ring.js';
import { attachView } from '../workers/candidate-view.js';
import { LoadCounter, RoomListeners } from '../workers/load-counter.js';
import { type Worker, workerInternals } from '../workers/worker.js';
import type { WorkerStatus, WorkerType } from '../workers/worker-spec.js';
import type { ConnectionMode } from '../workers/worker-url.js';

/** @internal The shared empty array every miss returns (frozen: nobody indexes into it). */
export const EMPTY_WORKERS: readonly Worker[] = Object.freeze([]);

const ALL = '\u0000all';
const WILDCARD_ONLY = '\u0000wildcard';

interface RingEntry {
  source: readonly Worker[];
  ring: HashRing;
}

/** @internal */
export class WorkerIndex {
  readonly #byId = new Map<string, Worker>();
  readonly #idByUrl = new Map<string, string>();
  /** Workers that name a model explicitly, per model, in registration order. */
  readonly #explicit = new Map<string, Map<string, Worker>>();
  /** Workers with no models (serve any model). */
  readonly #wildcard = new Map<string, Worker>();
  readonly #byType = new Map<WorkerType, Map<string, Worker>>();
  readonly #byConnection = new Map<ConnectionMode, Map<string, Worker>>();

  #all: readonly Worker[] | undefined = EMPTY_WORKERS;
  #wildcardArray: readonly Worker[] | undefined = EMPTY_WORKERS;
  #models: readonly string[] | undefined;
  readonly #modelArrays = new Map<string, readonly Worker[]>();
  readonly #typeArrays = new Map<WorkerType, readonly Worker[]>();
  readonly #connectionArrays = new Map<ConnectionMode, readonly Worker[]>();
  /** Per cached list, its workers of each type (`byModelAndType`), gone with the list. */
  readonly #typed = new WeakMap<readonly Worker[], Map<WorkerType, readonly Worker[]>>();

  /** In-flight totals: every worker, the wildcard workers, each explicitly served model. */
  readonly #allLoad = new LoadCounter();
  readonly #wildcardLoad = new LoadCounter();
  readonly #modelLoad = new Map<string, LoadCounter>();
  /** Who is told when room may have freed on any worker (routers with admission). */
  readonly room = new RoomListeners(this.#allLoad);
  readonly #hasher: Hasher;
  readonly #virtualNodes: number;
  readonly #points: PointCache = new Map();
  readonly #rings = new Map<string, RingEntry>();
  #ringsBuilt = 0;

  constructor(hasher: Hasher, virtualNodes: number) {
    this.#hasher = hasher;
    this.#virtualNodes = virtualNodes;
  }

  get size(): number {
    return this.#byId.size;
  }

  get ringsBuilt(): number {
    return this.#ringsBuilt;
  }

  get(id: string): Worker | undefined {
    return this.#byId.get(id);
  }

  idByUrl(url: string): string | undefined {
    return this.#idByUrl.get(url);
  }

  /** Live workers in registration order (cached). */
  all(): readonly Worker[] {
    if (this.#all === undefined) {
      const all = this.#byId.size === 0 ? EMPTY_WORKERS : [...this.#byId.values()];
      if (all !== EMPTY_WORKERS) this.#attach(all, [this.#allLoad], undefined);
      this.#all = all;
    }
    return this.#all;
  }

  /** Explicitly served model ids, sorted (frozen, cached). */
  models(): readonly string[] {
    return (this.#models ??= Object.freeze([...this.#explicit.keys()].sort()));
  }

  /** Whether some live worker names `model` explicitly. */
  hasModel(model: string): boolean {
    return this.#explicit.has(model);
  }

  /**
   * Workers that serve `model`: those naming it plus the wildcard workers. When the registry
   * serves at most one model, that set is every worker, and the all-workers array is returned
   * (the same object), so the model's ring and the wildcard ring are one object too.
   */
  byModel(model: string): readonly Worker[] {
    return this.#modelArrays.get(model) ?? this.#buildModelArray(model);
  }

  byType(type: WorkerType): readonly Worker[] {
    return grouped(this.#typeArrays, this.#byType, type);
  }

  /**
   * The workers of `type` in `byModel(model)` (every worker's list when `model` is undefined):
   * filtered once per list, kept as long as the list is; the list itself when all are of `type`.
   */
  byModelAndType(model: string | undefined, type: WorkerType): readonly Worker[] {
    const source = model === undefined ? this.all() : this.byModel(model);
    let views = this.#typed.get(source);
    if (views === undefined) {
      views = new Map();
      this.#typed.set(source, views);
    }
    let workers = views.get(type);
    if (workers === undefined) {
      const typed = source.filter((w) => w.type === type);
      workers =
        typed.length === source.length ? source : typed.length === 0 ? EMPTY_WORKERS : typed;
      views.set(type, workers);
    }
    return workers;
  }

  byConnection(connection: ConnectionMode): readonly Worker[] {
    return grouped(this.#connectionArrays, this.#byConnection, connection);
  }

  /** The ring over `byModel(model)`, or over every worker when `model` is undefined. */
  ring(model: string | undefined): HashRing {
    const workers = model === undefined ? this.all() : this.byModel(model);
    return this.#ringOf(workers, model);
  }

  /** The ring over `workers`, one of the arrays `all()` / `byModel(model)` returns now. */
  #ringOf(workers: readonly Worker[], model: string | undefined): HashRing {
    const key = workers === this.#all ? ALL : this.#explicit.has(model!) ? model! : WILDCARD_ONLY;
    const entry = this.#rings.get(key);
    if (entry !== undefined) {
      if (entry.source === workers) return entry.ring;
      if (sameUrls(entry.ring, workers)) {
        entry.source = workers;
        return entry.ring;
      }
    }
    const ring = buildRing(
      this.#hasher,
      workers.map((w) => w.url),
      this.#virtualNodes,
      this.#points,
    );
    this.#ringsBuilt++;
    this.#rings.set(key, { source: workers, ring });
    return ring;
  }

  /** Counts by status, type and connection, for `stats()`. O(n). */
  counts(): {
    workers: number;
    models: number;
    wildcardWorkers: number;
    byStatus: Record<WorkerStatus, number>;
    byType: Record<WorkerType, number>;
    byConnection: Record<ConnectionMode, number>;
  } {
    const byStatus: Record<WorkerStatus, number> = {
      pending: 0,
      ready: 0,
      not_ready: 0,
      failed: 0,
      draining: 0,
    };
    const all = this.all();
    for (let i = 0; i < all.length; i++) byStatus[all[i]!.status]++;
    const size = (groups: Map<string, Map<string, Worker>>, key: string): number =>
      groups.get(key)?.size ?? 0;
    return {
      workers: this.#byId.size,
      models: this.#explicit.size,
      wildcardWorkers: this.#wildcard.size,
      byStatus,
      byType: {
        regular: size(this.#byType, 'regular'),
        prefill: size(this.#byType, 'prefill'),
        decode: size(this.#byType, 'decode'),
      },
      byConnection: {
        http: size(this.#byConnection, 'http'),
        grpc: size(this.#byConnection, 'grpc'),
      },
    };
  }

  /** Explicitly served model → ids of the workers naming it, for `snapshot()`. O(n). */
  explicitMembers(): Record<string, readonly string[]> {
    const out: Record<string, readonly string[]> = {};
    for (const model of this.models()) out[model] = [...this.#explicit.get(model)!.keys()];
    return out;
  }

  add(worker: Worker): void {
    this.#byId.set(worker.id, worker);
    this.#idByUrl.set(worker.url, worker.id);
    this.#link(worker);
  }

  /**
   * Swaps `old` for `next` (same id and URL), keeping the id's position everywhere. Only the
   * arrays that contain the worker are invalidated, and only models it joins or leaves change
   * membership, so a replace that keeps the models keeps every ring.
   */
  replace(old: Worker, next: Worker): void {
    const id = next.id;
    this.#byId.set(id, next);
    this.#all = undefined;
    if (old.models.length === 0 || next.models.length === 0) {
      if (old.models.length === 0) this.#wildcard.delete(id);
      else for (const model of old.models) this.#removeMember(model, id);
      if (next.models.length === 0) this.#wildcard.set(id, next);
      else for (const model of next.models) this.#addMember(model, next);
      this.#invalidateWildcard();
    } else {
      for (const model of old.models) if (!next.serves(model)) this.#removeMember(model, id);
      for (const model of next.models) this.#addMember(model, next);
    }
    this.#setCounters(next);
    this.#swapGroup(this.#byType, this.#typeArrays, old.type, next.type, next);
    this.#swapGroup(
      this.#byConnection,
      this.#connectionArrays,
      old.connection,
      next.connection,
      next,
    );
  }

  remove(worker: Worker): void {
    this.#unlink(worker);
    this.#byId.delete(worker.id);
    if (this.#idByUrl.get(worker.url) === worker.id) this.#idByUrl.delete(worker.url);
    this.#points.delete(worker.url);
  }

  /** Cached only for served models: unknown model names come from requests and are unbounded. */
  #buildModelArray(model: string): readonly Worker[] {
    const explicit = this.#explicit.get(model);
    if (explicit === undefined) return this.#wildcardWorkers();
    let array: readonly Worker[];
    if (this.#explicit.size === 1) array = this.all();
    else {
      array =
        this.#wildcard.size === 0
          ? [...explicit.values()]
          : [...explicit.values(), ...this.#wildcard.values()];
      this.#attach(array, [this.#modelLoad.get(model)!, this.#wildcardLoad], model);
    }
    this.#modelArrays.set(model, array);
    return array;
  }

  #wildcardWorkers(): readonly Worker[] {
    if (this.#explicit.size === 0) return this.all();
    if (this.#wildcardArray === undefined) {
      const wildcard = this.#wildcard.size === 0 ? EMPTY_WORKERS : [...this.#wildcard.values()];
      if (wildcard !== EMPTY_WORKERS) this.#attach(wildcard, [this.#wildcardLoad], WILDCARD_ONLY);
      this.#wildcardArray = wildcard;
    }
    return this.#wildcardArray;
  }

  /** Points the worker's leases at the totals of the groups it belongs to now. */
  #setCounters(worker: Worker): void {
    const counters =
      worker.models.length === 0
        ? [this.#allLoad, this.#wildcardLoad]
        : [this.#allLoad, ...worker.models.map((m) => this.#modelLoad.get(m)!)];
    // The registry-wide group comes first: views of foreign lists read their version from it.
    workerInternals.runtimeOf(worker).counters = counters;
  }

  #link(worker: Worker): void {
    if (worker.models.length === 0) {
      this.#wildcard.set(worker.id, worker);
      this.#invalidateWildcard();
    } else {
      for (const model of worker.models) this.#addMember(model, worker);
    }
    this.#setCounters(worker);
    group(this.#byType, worker.type).set(worker.id, worker);
    group(this.#byConnection, worker.connection).set(worker.id, worker);
    this.#typeArrays.delete(worker.type);
    this.#connectionArrays.delete(worker.connection);
    this.#all = undefined;
  }

  #unlink(worker: Worker): void {
    const id = worker.id;
    if (worker.models.length === 0) {
      this.#wildcard.delete(id);
      this.#invalidateWildcard();
    } else {
      for (const model of worker.models) this.#removeMember(model, id);
    }
    this.#byType.get(worker.type)?.delete(id);
    this.#byConnection.get(worker.connection)?.delete(id);
    this.#typeArrays.delete(worker.type);
    this.#connectionArrays.delete(worker.connection);
    this.#all = undefined;
  }

  /** Adds (or, for a member already there, swaps in place) a worker naming `model`. */
  #addMember(model: string, worker: Worker): void {
    let members = this.#explicit.get(model);
    if (members === undefined) {
      members = new Map();
      this.#explicit.set(model, members);
      this.#modelLoad.set(model, new LoadCounter());
      this.#modelSetChanged();
    }
    members.set(worker.id, worker);
    this.#modelArrays.delete(model);
  }

  #removeMember(model: string, id: string): void {
    const members = this.#explicit.get(model);
    if (members === undefined) return;
    members.delete(id);
    this.#modelArrays.delete(model);
    if (members.size === 0) {
      this.#explicit.delete(model);
      this.#modelLoad.delete(model);
      this.#rings.delete(model);
      this.#modelSetChanged();
    }
  }

  /**
   * The set of served models changed. Arrays of unchanged models only depend on how many models
   * there are when that number is 0 or 1 (then a model's array is the all-workers array).
   */
  #modelSetChanged(): void {
    this.#models = undefined;
    if (this.#explicit.size <= 2) this.#modelArrays.clear();
  }

  #swapGroup<K>(
    groups: Map<K, Map<string, Worker>>,
    arrays: Map<K, readonly Worker[]>,
    from: K,
    to: K,
    next: Worker,
  ): void {
    if (from !== to) groups.get(from)?.delete(next.id);
    group(groups, to).set(next.id, next);
    arrays.delete(from);
    arrays.delete(to);
  }

  /**
   * Attaches the candidate view of an array handed out: its in-flight groups (which also make its
   * version) and its ring — the registry's ring as long as the array is still current; a stale
   * array held by a caller gets none, so a policy builds one over exactly its workers.
   */
  #attach(array: readonly Worker[], groups: readonly LoadCounter[], model: string | undefined) {
    const current = (): boolean =>
      model === undefined
        ? this.#all === array
        : (model === WILDCARD_ONLY ? this.#wildcardWorkers() : this.byModel(model)) === array;
    attachView(array, groups, () =>
      current() ? this.#ringOf(array, model === WILDCARD_ONLY ? undefined : model) : undefined,
    );
  }

  #invalidateWildcard(): void {
    this.#wildcardArray = undefined;
    this.#modelArrays.clear();
  }
}

/**
 * A type or connection group's array, cached in `arrays`. No view is attached: the one `viewOf`
 * builds on first use has no in-flight groups, and its version is the registry's.
 */
function grouped<K>(
  arrays: Map<K, readonly Worker[]>,
  groups: Map<K, Map<string, Worker>>,
  key: K,
): readonly Worker[] {
  let array = arrays.get(key);
  if (array === undefined) {
    const members = groups.get(key);
    array = members === undefined || members.size === 0 ? EMPTY_WORKERS : [...members.values()];
    arrays.set(key, array);
  }
  return array;
}

function group<K, V>(map: Map<K, Map<string, V>>, key: K): Map<string, V> {
  let members = map.get(key);
  if (members === undefined) {
    members = new Map();
    map.set(key, members);
  }
  return members;
}

/** Whether `ring` holds exactly the URLs of `workers` (URLs are unique among live workers). */
function sameUrls(ring: HashRing, workers: readonly Worker[]): boolean {
  if (ring.workerCount !== workers.length) return false;
  for (const worker of workers) if (!ring.has(worker.url)) return false;
  return true;
}
