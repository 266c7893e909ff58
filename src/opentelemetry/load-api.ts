/**
 * The optional peer `@opentelemetry/api`, loaded when first asked for, so `fleetroute` and
 * `fleetroute/opentelemetry` import without it; and the parts of it used here, typed here.
 *
 * @module
 * @internal
 */
import { optionalPeer } from '../core/optional-peer.js';
import type {
  OpenTelemetryContext,
  OpenTelemetryMeter,
  OpenTelemetrySpan,
  OpenTelemetryTracer,
} from './api-types.js';

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

/**
 * @internal Loads `@opentelemetry/api` once per process (ESM or CommonJS, whichever the bundle
 * is).
 * @throws {@link FleetRouteError} `MISSING_DEPENDENCY` (as a rejection) naming the package and the
 *   command that installs it; a later call tries again.
 */
export const loadOpenTelemetryApi: () => Promise<OtelApi> = optionalPeer<OtelApi>({
  name: '@opentelemetry/api',
  range: '^1.3.0',
  by: 'fleetroute/opentelemetry',
  usable: (m) => typeof m.trace?.setSpan === 'function',
});
