/**
 * Every option is declared once, in its component's option table; the TSDoc that documents it
 * must agree: each option of a table is a property of the interface the table names, and the
 * property's `@defaultValue` starts with the default the table holds. And no table is left out.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ADMISSION_OPTIONS } from '../../src/admission/admission-options.js';
import { OptionTable } from '../../src/core/option-table.js';
import { DNS_DISCOVERY_OPTIONS } from '../../src/dns/dns-discovery-options.js';
import { KV_DECODE_LIMITS } from '../../src/kv-events/batch-decoder.js';
import { KV_SUBSCRIBER_OPTIONS } from '../../src/kv-events/subscriber-options.js';
import { KV_TRANSLATOR_OPTIONS } from '../../src/kv-events/translator.js';
import { DISAGGREGATION_OPTIONS } from '../../src/openai/disaggregation-options.js';
import { OPENAI_HANDLER_OPTIONS } from '../../src/openai/openai-handler-options.js';
import { OPENAI_REQUEST_OPTIONS } from '../../src/openai/openai-request.js';
import { OPENTELEMETRY_OPTIONS } from '../../src/opentelemetry/instrument-router.js';
import { ADAPTER_AWARE_OPTIONS } from '../../src/policies/adapter-aware.js';
import { DISAGGREGATION_RULE_OPTIONS } from '../../src/policies/conditional-disaggregation.js';
import { policyOptionTables } from '../../src/policies/create-policy.js';
import { COMMON_OPTIONS } from '../../src/policies/support/config.js';
import { PROMETHEUS_METRICS_OPTIONS } from '../../src/prometheus/create-prometheus-metrics.js';
import { REDIS_STORE_OPTIONS } from '../../src/redis/redis-store.js';
import { REGISTRY_OPTIONS } from '../../src/registry/registry-options.js';
import {
  CIRCUIT_BREAKER_OPTIONS,
  WINDOW_OPTIONS,
} from '../../src/resilience/circuit-breaker-config.js';
import { HEALTH_OPTIONS } from '../../src/resilience/health-config.js';
import { RETRY_OPTIONS } from '../../src/resilience/retry-config.js';
import {
  LOAD_POLLING_OPTIONS,
  RETRY_HOOK_OPTIONS,
  ROUTER_OPTIONS,
} from '../../src/router/router-options.js';
import { MEMORY_STORE_OPTIONS } from '../../src/shared/memory-store.js';
import {
  SHARED_LOADS_OPTIONS,
  SHARED_PREFIX_OPTIONS as SHARED_PREFIX_INDEX_OPTIONS,
  SHARED_SESSIONS_OPTIONS,
  SHARED_STATE_OPTIONS,
} from '../../src/shared/shared-state-options.js';
import { COMPARE_OPTIONS } from '../../src/sim/compare.js';
import { SIM_DISAGGREGATION_OPTIONS } from '../../src/sim/disaggregation.js';
import { FLEET_OPTIONS } from '../../src/sim/fleet-model.js';
import { SIMULATION_OPTIONS } from '../../src/sim/simulation-options.js';
import { AGENT_CONVERSATIONS_OPTIONS } from '../../src/sim/workloads/agent-conversations.js';
import { HOT_PREFIX_OPTIONS } from '../../src/sim/workloads/hot-prefix.js';
import { LORA_ADAPTERS_OPTIONS } from '../../src/sim/workloads/lora-adapters.js';
import { MOONCAKE_OPTIONS } from '../../src/sim/workloads/mooncake-trace.js';
import { MULTI_TURN_CHAT_OPTIONS } from '../../src/sim/workloads/multi-turn-chat.js';
import { SHARED_PREFIX_OPTIONS } from '../../src/sim/workloads/shared-prefix.js';
import { ZERO_REUSE_OPTIONS } from '../../src/sim/workloads/zero-reuse.js';
import { HTTP_TRANSPORT_OPTIONS } from '../../src/transport/http/http-transport-options.js';
import { PROMETHEUS_PARSE_OPTIONS } from '../../src/transport/http/prometheus-text.js';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

type AnyTable = OptionTable<Record<string, never>>;

const TABLES = [
  COMMON_OPTIONS,
  ...policyOptionTables(),
  HEALTH_OPTIONS,
  RETRY_OPTIONS,
  CIRCUIT_BREAKER_OPTIONS,
  WINDOW_OPTIONS,
  LOAD_POLLING_OPTIONS,
  ROUTER_OPTIONS,
  ADMISSION_OPTIONS,
  RETRY_HOOK_OPTIONS,
  REGISTRY_OPTIONS,
  HTTP_TRANSPORT_OPTIONS,
  PROMETHEUS_PARSE_OPTIONS,
  PROMETHEUS_METRICS_OPTIONS,
  OPENTELEMETRY_OPTIONS,
  KV_DECODE_LIMITS,
  KV_TRANSLATOR_OPTIONS,
  KV_SUBSCRIBER_OPTIONS,
  DNS_DISCOVERY_OPTIONS,
  FLEET_OPTIONS,
  SIMULATION_OPTIONS,
  SIM_DISAGGREGATION_OPTIONS,
  COMPARE_OPTIONS,
  SHARED_PREFIX_OPTIONS,
  MULTI_TURN_CHAT_OPTIONS,
  HOT_PREFIX_OPTIONS,
  ZERO_REUSE_OPTIONS,
  MOONCAKE_OPTIONS,
  AGENT_CONVERSATIONS_OPTIONS,
  SHARED_STATE_OPTIONS,
  SHARED_LOADS_OPTIONS,
  SHARED_SESSIONS_OPTIONS,
  SHARED_PREFIX_INDEX_OPTIONS,
  MEMORY_STORE_OPTIONS,
  REDIS_STORE_OPTIONS,
  OPENAI_REQUEST_OPTIONS,
  OPENAI_HANDLER_OPTIONS,
  DISAGGREGATION_RULE_OPTIONS,
  ADAPTER_AWARE_OPTIONS,
  LORA_ADAPTERS_OPTIONS,
  DISAGGREGATION_OPTIONS,
] as unknown as AnyTable[];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Interface name → property name → its `@defaultValue` text (undefined when it has none). */
function documentedProperties(): Map<string, Map<string, string | undefined>> {
  const interfaces = new Map<string, Map<string, string | undefined>>();
  for (const file of sources(SRC)) {
    const source = ts.createSourceFile(
      file,
      readFileSync(file, 'utf8'),
      ts.ScriptTarget.Latest,
      true,
    );
    for (const statement of source.statements) {
      if (!ts.isInterfaceDeclaration(statement)) continue;
      const properties = new Map<string, string | undefined>();
      for (const member of statement.members) {
        if (!ts.isPropertySignature(member) || !ts.isIdentifier(member.name)) continue;
        const tag = ts.getJSDocTags(member).find((t) => t.tagName.text === 'defaultValue');
        const text =
          tag === undefined ? undefined : (ts.getTextOfJSDocComment(tag.comment)?.trim() ?? '');
        properties.set(member.name.text, text);
      }
      interfaces.set(statement.name.text, properties);
    }
  }
  return interfaces;
}

/** `262,144` and `262_144` read as `262144`. */
function normalise(text: string): string {
  return text.replace(/(\d)[,_](?=\d{3}\b)/g, '$1').replace(/\s+/g, ' ');
}

describe('option tables and their TSDoc', () => {
  const documented = documentedProperties();

  it('every option table in the sources is checked here', () => {
    let declared = 0;
    for (const file of sources(SRC)) {
      declared += readFileSync(file, 'utf8').split('new OptionTable(').length - 1;
    }
    // policyOptions() builds the policy tables: one `new OptionTable(` for all of them.
    const policyTables = policyOptionTables().length;
    expect(TABLES.length - policyTables + 1).toBe(declared);
  });

  for (const table of TABLES) {
    it(`${table.documentedBy}: every option is documented, with the table's default`, () => {
      if (table.keys.length === 0) return; // only the common options (a type alias of them)
      const properties = documented.get(table.documentedBy);
      expect(properties, `interface ${table.documentedBy}`).toBeDefined();
      for (const key of table.keys) {
        expect(properties!.has(key), `${table.documentedBy}.${key} is documented`).toBe(true);
        const expected = table.documentedDefault(key as never);
        if (expected === undefined || expected === '') continue;
        const text = properties!.get(key);
        expect(text, `${table.documentedBy}.${key} has a @defaultValue`).toBeDefined();
        expect(
          normalise(text!).startsWith(normalise(expected)),
          `${table.documentedBy}.${key}: @defaultValue "${text}" should start with "${expected}"`,
        ).toBe(true);
      }
    });
  }

  it('catches a wrong @defaultValue (the check is not vacuous)', () => {
    const table = new OptionTable('demo', 'HealthConfig', {
      intervalMs: HEALTH_OPTIONS.specs.intervalMs,
    });
    const text = documented.get('HealthConfig')!.get('intervalMs')!;
    expect(normalise(text).startsWith(table.documentedDefault('intervalMs')!)).toBe(true);
    expect(normalise(text).startsWith('31000')).toBe(false);
  });
});
