#!/usr/bin/env node
/**
 * Checks the published package the way its users meet it: packs it, installs the tarball into
 * fresh projects and has each one load, type-check or run it.
 *
 * - contents: LICENSE, package metadata, no source maps;
 * - esm-js / cjs-js: `import` / `require` of every subpath, then a small routing program;
 * - ts-nodenext (ESM), ts-node16-cjs (CommonJS) and ts-node10: strict `tsc --noEmit` with
 *   `skipLibCheck: false` and no `@types/node`;
 * - bin: the installed `fleetroute` executable.
 *
 * Run after `npm run build`: `node scripts/check-consumers.mjs`. It uses this repository's
 * TypeScript, so the only network it may need is the npm registry, for the package's runtime
 * dependencies (the npm cache usually has them). Exits 1 after listing every failed step; the
 * temporary projects are then kept for inspection.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const REPOSITORY = 'https://github.com/fleetroute/fleetroute';
// Every entry point the package exports; the programs below import each one.
const SUBPATHS = [
  'fleetroute',
  'fleetroute/http',
  'fleetroute/sim',
  'fleetroute/kv-events',
  'fleetroute/prometheus',
  'fleetroute/opentelemetry',
  'fleetroute/redis',
  'fleetroute/dns',
  'fleetroute/openai',
];

/** Runs a command; throws with its output when it fails. */
function run(command, args, cwd) {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', env: process.env });
  if (result.error) throw result.error;
  if (result.status !== 0) {
    const output = `${result.stdout}${result.stderr}`.trim();
    throw new Error(`\`${[command, ...args].join(' ')}\` exited with ${result.status}\n${output}`);
  }
  return result.stdout;
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

function writeProject(dir, files) {
  mkdirSync(dir, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    const text = typeof content === 'string' ? content : `${JSON.stringify(content, null, 2)}\n`;
    writeFileSync(join(dir, name), text);
  }
}

// The same program in both module systems: two workers, a policy, a lease. `prefix_hash` hashes
// the prompt, so the WebAssembly hasher is loaded too.
const PROGRAM = `
  for (const name of ['httpTransport', 'parsePrometheusText'])
    if (typeof http[name] !== 'function') throw new Error('fleetroute/http: no ' + name);
  for (const name of ['simulate', 'comparePolicies'])
    if (typeof sim[name] !== 'function') throw new Error('fleetroute/sim: no ' + name);
  const registry = await fleetroute.WorkerRegistry.create({ defaultStatus: 'ready' });
  await registry.register({ url: 'http://127.0.0.1:8001', models: ['m'] });
  await registry.register({ url: '127.0.0.1:8002', models: ['m'] });
  const policy = fleetroute.createPolicy('prefix_hash');
  const first = policy.select(registry.getByModel('m'), { text: 'You are a helpful assistant.' });
  const again = policy.select(registry.getByModel('m'), { text: 'You are a helpful assistant.' });
  if (first === undefined || first !== again) throw new Error('prefix_hash lost affinity');
  const lease = first.acquire();
  if (first.load !== 1) throw new Error('lease did not count');
  lease.release({ ok: true, status: 200 });
  if (first.load !== 0) throw new Error('release did not count');
  for (const name of ['readKvEventFrames', 'decodeKvEventBatch', 'loadMsgpackDecode', 'kvEventEndpointOfRank', 'defaultKvEventSource'])
    if (typeof kv[name] !== 'function') throw new Error('fleetroute/kv-events: no ' + name);
  // The optional peer is not installed here: loading it fails with an error that names it.
  const missing = await kv.loadMsgpackDecode().then(() => 'loaded', (error) => error);
  if (
    !(missing instanceof fleetroute.FleetRouteError) ||
    missing.code !== 'MISSING_DEPENDENCY' ||
    !missing.message.includes('@msgpack/msgpack')
  )
    throw new Error('fleetroute/kv-events: expected MISSING_DEPENDENCY naming @msgpack/msgpack, got ' + missing);
  // Subscribing needs zeromq, not installed here either: named the same way.
  const noZmq = await kv.KvEventSubscriber.open({
    workerUrl: 'http://127.0.0.1:8001',
    endpoint: 'tcp://127.0.0.1:5557',
    target: fleetroute.createPolicy('cache_aware'),
  }).then(() => 'opened', (error) => error);
  if (noZmq?.code !== 'MISSING_DEPENDENCY' || !noZmq.message.includes('zeromq'))
    throw new Error('fleetroute/kv-events: expected MISSING_DEPENDENCY naming zeromq, got ' + noZmq);
  // Metrics need prom-client, not installed here: named the same way. A Router from
  // 'fleetroute' is accepted by the separately bundled 'fleetroute/prometheus'.
  if (typeof prom.createPrometheusMetrics !== 'function') throw new Error('fleetroute/prometheus: no createPrometheusMetrics');
  const metricsRouter = new fleetroute.Router({ registry, transport: { probe: async () => true }, health: false });
  const fakeRegistry = { registerMetric() {}, getSingleMetric() {}, removeSingleMetric() {} };
  const noProm = await prom.createPrometheusMetrics({ router: metricsRouter, workers: registry, registry: fakeRegistry }).then(() => 'loaded', (error) => error);
  await metricsRouter.close();
  if (!(noProm instanceof fleetroute.FleetRouteError) || noProm.code !== 'MISSING_DEPENDENCY' || !noProm.message.includes('prom-client'))
    throw new Error('fleetroute/prometheus: expected MISSING_DEPENDENCY naming prom-client, got ' + noProm);
  // Tracing needs @opentelemetry/api, not installed here: named the same way.
  if (typeof otel.instrumentRouter !== 'function') throw new Error('fleetroute/opentelemetry: no instrumentRouter');
  const tracedRouter = new fleetroute.Router({ registry, transport: { probe: async () => true }, health: false });
  const noOtel = await otel.instrumentRouter(tracedRouter).then(() => 'loaded', (error) => error);
  await tracedRouter.close();
  if (!(noOtel instanceof fleetroute.FleetRouteError) || noOtel.code !== 'MISSING_DEPENDENCY' || !noOtel.message.includes('@opentelemetry/api'))
    throw new Error('fleetroute/opentelemetry: expected MISSING_DEPENDENCY naming @opentelemetry/api, got ' + noOtel);
  // Shared state on Redis needs ioredis, not installed here: the entry point imports, and
  // building a store (before any connection is tried) fails naming it. The in-process store
  // from 'fleetroute' needs nothing.
  if (typeof redis.RedisSharedStore?.create !== 'function') throw new Error('fleetroute/redis: no RedisSharedStore.create');
  const noRedis = await redis.RedisSharedStore.create({ url: 'redis://127.0.0.1:1', connectTimeoutMs: 0 }).then(() => 'created', (error) => error);
  if (!(noRedis instanceof fleetroute.FleetRouteError) || noRedis.code !== 'MISSING_DEPENDENCY' || !noRedis.message.includes('ioredis'))
    throw new Error('fleetroute/redis: expected MISSING_DEPENDENCY naming ioredis, got ' + noRedis);
  // DNS discovery needs no peer (node:dns): a bad option is refused with the package's error,
  // and a discovery over a registry from 'fleetroute' closes cleanly.
  if (typeof dns.DnsDiscovery !== 'function') throw new Error('fleetroute/dns: no DnsDiscovery');
  let noPort;
  try { new dns.DnsDiscovery(registry, { name: 'workers.example' }); } catch (error) { noPort = error; }
  if (!(noPort instanceof fleetroute.FleetRouteError) || noPort.code !== 'INVALID_ARGUMENT' || !noPort.message.includes('port'))
    throw new Error('fleetroute/dns: expected INVALID_ARGUMENT naming port, got ' + noPort);
  const discovery = new dns.DnsDiscovery(registry, { name: 'workers.example', port: 8000, servers: ['127.0.0.1:9'] });
  await discovery.close();
  if ((await discovery.refresh()).type !== 'closed') throw new Error('fleetroute/dns: a closed discovery looked up');
  const memoryShared = new fleetroute.SharedState({ store: new fleetroute.MemorySharedStore(), loads: { refreshMs: 0 } });
  const sharedRouter = new fleetroute.Router({ registry, transport: { probe: async () => true }, health: false, shared: memoryShared });
  sharedRouter.start();
  await memoryShared.sync();
  await sharedRouter.close();
  if (memoryShared.stats().loads.syncs < 1) throw new Error('fleetroute: SharedState over MemorySharedStore did not sync');
  // The translator needs no peer; its keys are blockHashes' (loaded by the registry above).
  const translator = await kv.KvEventTranslator.create({ pageSize: 4 });
  const [stored] = translator.translate([{ type: 'stored', hashes: [1n], parent: undefined,
    tokenIds: [1, 2, 3, 4], blockSize: 4, loraName: undefined, medium: undefined,
    groupIdx: undefined, specKind: undefined, extraKeys: false }]);
  if (stored.hashes[0] !== fleetroute.blockHashes([1, 2, 3, 4], { pageSize: 4 })[0])
    throw new Error('fleetroute/kv-events: translated keys differ from blockHashes');
  // The OpenAI front needs no peer: its fetch handler answers the model list with no network.
  for (const name of ['createOpenAIHandler', 'createOpenAINodeHandler', 'openAIExpress', 'openAIFastify', 'openAIRequest'])
    if (typeof openai[name] !== 'function') throw new Error('fleetroute/openai: no ' + name);
  const frontRouter = new fleetroute.Router({ registry, transport: { probe: async () => true }, health: false });
  const handler = openai.createOpenAIHandler({ router: frontRouter });
  const listed = await (await handler(new Request('http://gateway/v1/models'))).json();
  await frontRouter.close();
  if (listed.object !== 'list' || listed.data[0]?.id !== 'm') throw new Error('fleetroute/openai: wrong model list ' + JSON.stringify(listed));
  const routed = openai.openAIRequest({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
  if (routed.model !== 'm' || typeof routed.text !== 'string') throw new Error('fleetroute/openai: openAIRequest read nothing');
  registry.close();
  console.log('routed to ' + first.url);
`;

const ESM_PROGRAM = `import * as fleetroute from 'fleetroute';
import * as http from 'fleetroute/http';
import * as sim from 'fleetroute/sim';
import * as kv from 'fleetroute/kv-events';
import * as prom from 'fleetroute/prometheus';
import * as otel from 'fleetroute/opentelemetry';
import * as redis from 'fleetroute/redis';
import * as dns from 'fleetroute/dns';
import * as openai from 'fleetroute/openai';
${PROGRAM}`;

const CJS_PROGRAM = `'use strict';
const fleetroute = require('fleetroute');
const http = require('fleetroute/http');
const sim = require('fleetroute/sim');
const kv = require('fleetroute/kv-events');
const prom = require('fleetroute/prometheus');
const otel = require('fleetroute/opentelemetry');
const redis = require('fleetroute/redis');
const dns = require('fleetroute/dns');
const openai = require('fleetroute/openai');
const pkg = require('fleetroute/package.json');
if (pkg.name !== 'fleetroute') throw new Error('fleetroute/package.json: wrong name');
async function main() {${PROGRAM}}
main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
`;

// Type-checked only (the JavaScript projects run the same calls).
const TS_PROGRAM = `import {
  createPolicy,
  FleetRouteError,
  type Policy,
  Router,
  type SelectRequest,
  SharedState,
  type SharedStateEvent,
  type SharedStateStats,
  type SharedStore,
  type Transport,
  type Worker,
  WorkerRegistry,
} from 'fleetroute';
import { type HttpTransport, httpTransport } from 'fleetroute/http';
import { type PolicyRun, simulate } from 'fleetroute/sim';
import {
  type EngineEventBatch,
  KvEventFeed,
  type KvEventSubscriberStats,
  KvEventTranslator,
  loadMsgpackDecode,
} from 'fleetroute/kv-events';
import type { OpenTelemetryOptions, RouterTracing, TracedAttemptContext } from 'fleetroute/opentelemetry';
import type { PrometheusMetrics, PrometheusMetricsOptions, PrometheusRegistry } from 'fleetroute/prometheus';
import { type RedisClientLike, RedisSharedStore, type RedisSharedStoreOptions } from 'fleetroute/redis';
import { DnsDiscovery, type DnsDiscoveryOptions, type DnsRefresh } from 'fleetroute/dns';
import {
  createOpenAIHandler,
  type OpenAIHandler,
  type OpenAIHandlerOptions,
  type OpenAIRequestOptions,
  openAIRequest,
} from 'fleetroute/openai';

export async function route(request: SelectRequest): Promise<Worker | undefined> {
  const registry: WorkerRegistry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  await registry.register({ url: 'http://127.0.0.1:8001', models: ['m'] });
  const policy: Policy = createPolicy('round_robin');
  const transport: HttpTransport = httpTransport();
  const core: Transport = transport;
  const router = new Router({ registry, transport: core, policy });
  await router.close();
  return policy.select(registry.getByModel('m'), request);
}

export function isFleetRouteError(error: unknown): boolean {
  return error instanceof FleetRouteError && typeof error.code === 'string';
}

export type Simulate = (...args: Parameters<typeof simulate>) => Promise<PolicyRun>;

export async function ingest(batch: EngineEventBatch): Promise<number> {
  const translator = await KvEventTranslator.create({ pageSize: 16, model: 'm' });
  const decode = await loadMsgpackDecode().catch(() => undefined);
  return translator.translate(batch.events).length + (decode === undefined ? 0 : 1);
}

export type Traced = [RouterTracing, OpenTelemetryOptions, TracedAttemptContext];
export type Measured = [PrometheusMetrics, PrometheusMetricsOptions, PrometheusRegistry];

export async function share(registry: WorkerRegistry, client: RedisClientLike): Promise<SharedStateStats> {
  const options: RedisSharedStoreOptions = { client, namespace: 'prod', connectTimeoutMs: 500 };
  const store: SharedStore = await RedisSharedStore.create(options);
  const shared = new SharedState({ store, sessions: false, prefixIndex: { ttlMs: 60_000 } });
  const router = new Router({ registry, transport: httpTransport(), shared });
  router.on('sharedState', (event: SharedStateEvent) => void event.part);
  await router.close();
  await (store as RedisSharedStore).close();
  return shared.stats();
}

export function front(router: Router, request: OpenAIRequestOptions): OpenAIHandler {
  const options: OpenAIHandlerOptions = { router, request, streamUsage: true };
  void openAIRequest({ model: 'm', prompt: 'x' }, {}, request).model;
  return createOpenAIHandler(options);
}

export async function discover(registry: WorkerRegistry): Promise<DnsRefresh> {
  const options: DnsDiscoveryOptions = { name: '_http._tcp.vllm.llm.svc.cluster.local', runtime: 'vllm' };
  const discovery = new DnsDiscovery(registry, options);
  discovery.on('lookup_failed', (event) => void event.keeping);
  const first = await discovery.start();
  await discovery.close();
  return first;
}

export async function follow(registry: WorkerRegistry): Promise<KvEventSubscriberStats[]> {
  const feed = await KvEventFeed.start({ registry, target: createPolicy('cache_aware') });
  const stats = Object.values(feed.stats().workers);
  await feed.close();
  return stats;
}
`;

const STRICT = { strict: true, skipLibCheck: false, noEmit: true, target: 'es2022', types: [] };

const TS_PROJECTS = {
  'ts-nodenext': { type: 'module', options: { module: 'nodenext', moduleResolution: 'nodenext' } },
  'ts-node16-cjs': { type: 'commonjs', options: { module: 'node16', moduleResolution: 'node16' } },
  'ts-node10': { type: 'commonjs', options: { module: 'commonjs', moduleResolution: 'node10' } },
};

/** LICENSE, metadata and file list of the tarball as installed; throws listing every problem. */
function checkContents(pack, installed) {
  const problems = [];
  const expect = (condition, message) => condition || problems.push(message);
  const files = new Set(pack.files.map((f) => f.path));
  for (const file of ['LICENSE', 'README.md', 'CHANGELOG.md', 'package.json', 'dist/cli.js'])
    expect(files.has(file), `the tarball has no ${file}`);
  const maps = [...files].filter((f) => f.endsWith('.map'));
  expect(maps.length === 0, `the tarball ships source maps: ${maps.join(', ')}`);
  for (const file of files) {
    if (!/\.[cm]?js$/.test(file)) continue;
    const text = readFileSync(join(installed, file), 'utf8');
    expect(!text.includes('//# sourceMappingURL='), `${file} points at a source map`);
  }
  const license = files.has('LICENSE') ? readFileSync(join(installed, 'LICENSE'), 'utf8') : '';
  expect(
    license === '' ||
      (license.includes('Apache License') && license.includes('Version 2.0, January 2004')),
    'LICENSE is not the Apache License 2.0',
  );
  const pkg = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
  expect(pkg.license === 'Apache-2.0', `package.json license is ${pkg.license}`);
  expect(String(pkg.repository?.url).includes(REPOSITORY), 'package.json has no repository');
  expect(String(pkg.homepage).startsWith(REPOSITORY), 'package.json has no homepage');
  expect(String(pkg.bugs?.url).startsWith(REPOSITORY), 'package.json has no bugs URL');
  const subpaths = Object.keys(pkg.exports)
    .filter((key) => key !== './package.json')
    .map((key) => `fleetroute${key.slice(1)}`);
  expect(
    subpaths.join() === SUBPATHS.join(),
    `the consumers import ${SUBPATHS.join(', ')}, the package exports ${subpaths.join(', ')}`,
  );
  check(problems.length === 0, problems.join('\n'));
  return `${pack.files.length} files, ${pack.size} B packed, ${pack.unpackedSize} B unpacked`;
}

function main() {
  check(existsSync(join(ROOT, 'dist', 'index.js')), 'no dist/: run `npm run build` first');
  check(existsSync(TSC), 'no node_modules/typescript: run `npm ci` first');
  const work = mkdtempSync(join(tmpdir(), 'fleetroute-consumers-'));
  const [pack] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', work], ROOT));
  const tarball = join(work, pack.filename);

  // One install; each consumer is a project of its own (own package.json, own module type)
  // below it and resolves `fleetroute` from the shared node_modules.
  writeProject(work, {
    'package.json': { name: 'consumers', private: true, dependencies: { fleetroute: tarball } },
  });
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], work);
  const installed = join(work, 'node_modules', 'fleetroute');

  const steps = [];
  const step = (name, fn) => steps.push({ name, fn });

  step('contents', () => checkContents(pack, installed));
  step('esm-js', () => {
    const dir = join(work, 'esm-js');
    writeProject(dir, { 'package.json': { type: 'module' }, 'main.js': ESM_PROGRAM });
    return run(process.execPath, ['main.js'], dir).trim();
  });
  step('cjs-js', () => {
    const dir = join(work, 'cjs-js');
    writeProject(dir, { 'package.json': { type: 'commonjs' }, 'main.js': CJS_PROGRAM });
    return run(process.execPath, ['main.js'], dir).trim();
  });
  for (const [name, { type, options }] of Object.entries(TS_PROJECTS)) {
    step(name, () => {
      const dir = join(work, name);
      writeProject(dir, {
        'package.json': { type },
        'tsconfig.json': { compilerOptions: { ...STRICT, ...options }, files: ['main.ts'] },
        'main.ts': TS_PROGRAM,
      });
      run(process.execPath, [TSC, '-p', dir], dir);
      return `tsc ${options.module}/${options.moduleResolution}: no errors`;
    });
  }
  step('bin', () => {
    const bin = join(work, 'node_modules', '.bin', 'fleetroute');
    const help = run(bin, ['simulate', '--help'], join(work, 'esm-js'));
    check(help.startsWith('Usage: fleetroute simulate'), `unexpected help:\n${help}`);
    return 'fleetroute simulate --help';
  });

  const failures = [];
  for (const { name, fn } of steps) {
    const started = performance.now();
    try {
      const detail = fn();
      const ms = Math.round(performance.now() - started);
      console.log(`ok    ${name.padEnd(14)} ${String(ms).padStart(5)} ms  ${detail}`);
    } catch (error) {
      failures.push(name);
      console.log(`FAIL  ${name}\n${String(error.message).replace(/^/gm, '      ')}`);
    }
  }
  if (failures.length > 0) {
    console.error(`\nconsumer checks failed: ${failures.join(', ')} (projects kept in ${work})`);
    process.exit(1);
  }
  rmSync(work, { recursive: true, force: true });
}

main();
