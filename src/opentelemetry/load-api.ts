/**
 * The optional peer `@opentelemetry/api`, loaded when first asked for, so `fleetroute` and
 * `fleetroute/opentelemetry` import without it; and the parts of it used here, typed here.
 *
 * @module
 * @internal
 */
import { FleetRouteError } from '../core/errors.js';
import type {
  OpenTelemetryContext,
  OpenTelemetryMeter,
  OpenTelemetrySpan,
  OpenTelemetryTracer,
} from './api-types.js';

const PACKAGE = '@opentelemetry/api';

/** @internal The members of `@opentelemetry/api` used here. */
export interface OtelApi {
  readonly trace: {
    getTracer(name: string, version?: string): OpenTelemetryTracer;
    setSpan(context: OpenTelemetryContext, span: OpenTelemetrySpan): OpenTelemetryContext;
  };
  readonly context: {
    active(): OpenTelemetryContext;
    with<R>(context: OpenTelemetryContext, fn: () => R): R;
  };
  readonly propagation: {
    inject(context: OpenTelemetryContext, carrier: Record<string, string>): void;
  };
  readonly metrics: {
    getMeter(name: string, version?: string): OpenTelemetryMeter;
  };
  readonly SpanKind: { readonly CLIENT: number };
  readonly SpanStatusCode: { readonly ERROR: number };
}

let loading: Promise<OtelApi> | undefined;

/**
 * @internal Loads `@opentelemetry/api` once per process (ESM or CommonJS, whichever the bundle
 * is).
 * @throws {@link FleetRouteError} `MISSING_DEPENDENCY` (as a rejection) naming the package and the
 *   command that installs it; a later call tries again.
 */
export function loadOpenTelemetryApi(): Promise<OtelApi> {
  loading ??= import(PACKAGE).then(
    (module: OtelApi & { default?: OtelApi }) => {
      // CommonJS: the named exports, or the whole module as the default export.
      const api = typeof module.trace === 'object' ? module : module.default;
      if (api === undefined || typeof api.trace?.setSpan !== 'function') {
        throw new FleetRouteError(
          'MISSING_DEPENDENCY',
          `fleetroute/opentelemetry could not read the ${PACKAGE} package: install ${PACKAGE}@^1.3.0`,
        );
      }
      return api;
    },
    (cause: unknown) => {
      loading = undefined;
      throw new FleetRouteError(
        'MISSING_DEPENDENCY',
        `fleetroute/opentelemetry needs the optional peer dependency ${PACKAGE}: npm install ${PACKAGE}@^1.3.0`,
        { cause },
      );
    },
  );
  return loading;
}
