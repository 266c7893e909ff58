/**
 * What a caller registers (`WorkerSpec`), and its validation into a frozen `ResolvedWorkerSpec`.
 *
 * @module
 */
import { FleetRouteError } from '../core/errors.js';
import {
  fail,
  givenFields,
  isWellFormed,
  readEnum,
  readInteger,
  readObject,
  readString,
} from '../core/options.js';
import {
  type CircuitBreakerConfig,
  resolveCircuitBreakerConfig,
} from '../resilience/circuit-breaker-config.js';
import { type HealthConfig, resolveHealthConfig } from '../resilience/health-config.js';
import { type ConnectionMode, parseWorkerUrl } from './worker-url.js';

/** A worker's role: a regular worker serves whole requests; prefill/decode serve one leg. @public */
export type WorkerType = 'regular' | 'prefill' | 'decode';
/** The model-server engine behind a worker. @public */
export type RuntimeType = 'vllm' | 'sglang' | 'trtllm' | 'unspecified';
/** A worker's lifecycle status. Only `ready` is routable. @public */
export type WorkerStatus = 'pending' | 'ready' | 'not_ready' | 'failed' | 'draining';

/** All worker types. @public */
export const WORKER_TYPES: readonly WorkerType[] = Object.freeze(['regular', 'prefill', 'decode']);
/** All connection modes. @public */
export const CONNECTION_MODES: readonly ConnectionMode[] = Object.freeze(['http', 'grpc']);
/** All runtimes. @public */
export const RUNTIME_TYPES: readonly RuntimeType[] = Object.freeze([
  'vllm',
  'sglang',
  'trtllm',
  'unspecified',
]);
/** All statuses. @public */
export const WORKER_STATUSES: readonly WorkerStatus[] = Object.freeze([
  'pending',
  'ready',
  'not_ready',
  'failed',
  'draining',
]);

/** Longest model id accepted. @public */
export const MAX_MODEL_ID_LENGTH = 256;
/** Most model ids one worker may serve. @public */
export const MAX_MODELS_PER_WORKER = 1024;

/**
 * @internal The one rule for a model id a worker may name (in its spec, or in a model-discovery
 * answer): a non-empty, well-formed string of at most {@link MAX_MODEL_ID_LENGTH} code units,
 * other than `'*'` (the wildcard is not a model: a wildcard worker names none).
 *
 * @returns whether `value` is such an id; never throws. Cost: O(length).
 */
export function isModelId(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length > 0 &&
    value.length <= MAX_MODEL_ID_LENGTH &&
    value !== '*' &&
    isWellFormed(value)
  );
}

/**
 * What a caller registers. Only `url` is required.
 *
 * @public
 */
export interface WorkerSpec {
  /**
   * `http(s)://host[:port][/path]`, `grpc(s)://host:port`, or a bare `host:port` (read as
   * `http://host:port`); `…@rank` names a data-parallel rank. See {@link parseWorkerUrl}.
   */
  readonly url: string;
  /** Model ids served. Empty or absent: a wildcard worker that serves any model. Duplicates are dropped. */
  readonly models?: readonly string[];
  /** @defaultValue 'regular' */
  readonly type?: WorkerType;
  /** Derived from the URL scheme when absent; must agree with it when present. */
  readonly connection?: ConnectionMode;
  /** @defaultValue 'unspecified' */
  readonly runtime?: RuntimeType;
  /** Free-form string labels (zone, GPU kind…). */
  readonly labels?: Readonly<Record<string, string>>;
  /** Bootstrap port of a prefill worker (PD disaggregation). */
  readonly bootstrapPort?: number;
  /** Data-parallel rank; also writable as `url@rank`. */
  readonly dpRank?: number;
  /** Data-parallel world size; `dpRank < dpSize`. */
  readonly dpSize?: number;
  /** Secret sent to the worker by transports. Never serialised, never in events, never logged. */
  readonly apiKey?: string;
  /** Initial status. @defaultValue the registry's `defaultStatus` ('pending') */
  readonly status?: WorkerStatus;
  /** Per-worker health-check overrides. */
  readonly health?: HealthConfig;
  /** Per-worker breaker overrides; `{ disabled: true }` turns this worker's breaker off. */
  readonly circuitBreaker?: CircuitBreakerConfig;
}

/** @internal A validated spec, every field filled in, frozen. */
export interface ResolvedWorkerSpec {
  readonly url: string;
  readonly baseUrl: string;
  readonly models: readonly string[];
  readonly type: WorkerType;
  readonly connection: ConnectionMode;
  readonly runtime: RuntimeType;
  readonly labels: Readonly<Record<string, string>>;
  readonly bootstrapPort: number | undefined;
  readonly dpRank: number | undefined;
  readonly dpSize: number | undefined;
  readonly apiKey: string | undefined;
  readonly status: WorkerStatus | undefined;
  readonly health: HealthConfig | undefined;
  readonly circuitBreaker: CircuitBreakerConfig | undefined;
}

const EMPTY_LABELS: Readonly<Record<string, string>> = Object.freeze({});
const EMPTY_MODELS: readonly string[] = Object.freeze([]);
const MAX_LABELS = 256;

/**
 * Validates a {@link WorkerSpec} completely before anything is mutated.
 *
 * @throws FleetRouteError `INVALID_URL` or `INVALID_ARGUMENT` naming the field.
 * @internal
 */
export function resolveWorkerSpec(input: unknown): ResolvedWorkerSpec {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    fail('spec', 'an object with a url', input);
  }
  const spec = input as Record<string, unknown>;
  const parsed = parseWorkerUrl(spec.url);
  const connection = readEnum(
    'spec.connection',
    spec.connection,
    CONNECTION_MODES,
    parsed.connection,
  );
  if (connection !== parsed.connection) {
    throw new FleetRouteError(
      'INVALID_ARGUMENT',
      `spec.connection is '${connection}' but the URL scheme means '${parsed.connection}'`,
    );
  }

  let dpRank = parsed.dpRank;
  const givenRank = readOptionalInteger('spec.dpRank', spec.dpRank, 0, 999_999);
  if (givenRank !== undefined && dpRank !== undefined && givenRank !== dpRank) {
    fail('spec.dpRank', `equal to the rank in the URL (${dpRank})`, givenRank);
  }
  dpRank ??= givenRank;
  const dpSize = readOptionalInteger('spec.dpSize', spec.dpSize, 1, 1_000_000);
  if (dpRank !== undefined && dpSize !== undefined && dpRank >= dpSize) {
    fail('spec.dpRank', `less than spec.dpSize (${dpSize})`, dpRank);
  }
  const url = dpRank === undefined ? parsed.baseUrl : `${parsed.baseUrl}@${dpRank}`;

  const apiKey =
    spec.apiKey === undefined ? undefined : readString('spec.apiKey', spec.apiKey, 16_384);
  const status =
    spec.status === undefined
      ? undefined
      : readEnum('spec.status', spec.status, WORKER_STATUSES, 'pending');

  return Object.freeze({
    url,
    baseUrl: parsed.baseUrl,
    models: readModels(spec.models),
    type: readEnum('spec.type', spec.type, WORKER_TYPES, 'regular'),
    connection,
    runtime: readEnum('spec.runtime', spec.runtime, RUNTIME_TYPES, 'unspecified'),
    labels: readLabels(spec.labels),
    bootstrapPort: readOptionalInteger('spec.bootstrapPort', spec.bootstrapPort, 1, 65_535),
    dpRank,
    dpSize,
    apiKey,
    status,
    health: readOverride(spec.health, 'spec.health', resolveHealthConfig),
    circuitBreaker: readOverride(
      spec.circuitBreaker,
      'spec.circuitBreaker',
      resolveCircuitBreakerConfig,
    ),
  });
}

function readOptionalInteger(
  field: string,
  value: unknown,
  min: number,
  max: number,
): number | undefined {
  return value === undefined ? undefined : readInteger(field, value, 0, min, max);
}

function readModels(value: unknown): readonly string[] {
  if (value === undefined || value === null) return EMPTY_MODELS;
  if (!Array.isArray(value)) fail('spec.models', 'an array of model ids', value);
  if (value.length > MAX_MODELS_PER_WORKER)
    fail('spec.models', `at most ${MAX_MODELS_PER_WORKER} model ids`, value);
  if (value.length === 0) return EMPTY_MODELS;
  const seen = new Set<string>();
  // An index loop, not forEach: a hole (`new Array(3)`) must fail like `undefined`, not vanish.
  for (let i = 0; i < value.length; i++) seen.add(readModelId(`spec.models[${i}]`, value[i]));
  return Object.freeze([...seen]);
}

/**
 * `value` if it {@link isModelId is a model id}; else throws naming `field`, with the rule it
 * breaks.
 */
function readModelId(field: string, value: unknown): string {
  if (isModelId(value)) return value;
  if (value === '*')
    fail(field, "a model id ('*' is not one: leave models empty for a wildcard worker)", value);
  // Not '*', so it breaks the string rule, which readString reports (and throws for).
  return readString(field, value, MAX_MODEL_ID_LENGTH);
}

function readLabels(value: unknown): Readonly<Record<string, string>> {
  if (value === undefined) return EMPTY_LABELS;
  const o = readObject('spec.labels', value);
  const keys = Object.keys(o);
  if (keys.length === 0) return EMPTY_LABELS;
  if (keys.length > MAX_LABELS) fail('spec.labels', `at most ${MAX_LABELS} labels`, value);
  const out: Record<string, string> = {};
  for (const key of keys) {
    readString('spec.labels key', key, 256);
    const v = o[key];
    if (typeof v !== 'string' || v.length > 4096)
      fail(`spec.labels.${key}`, 'a string of at most 4096 characters', v);
    out[key] = v;
  }
  return Object.freeze(out);
}

/** Validates a partial override by resolving it, but keeps only the fields the caller gave. */
function readOverride<T extends object>(
  value: unknown,
  field: string,
  resolve: (input: unknown, field: string) => unknown,
): T | undefined {
  if (value === undefined) return undefined;
  resolve(value, field);
  return givenFields(value as T);
}

/** @internal `true` for no model, `''` or `'*'` (every model); throws for a non-string. */
export function isWildcardModel(model: string | undefined): boolean {
  if (model === undefined) return true;
  if (typeof model !== 'string') fail('model', 'a string', model);
  return model === '' || model === '*';
}
