/**
 * A disaggregated fleet for tests over real HTTP: stand-in prefill and decode engines
 * (`pd-engines.ts`) registered with a router, behind the OpenAI front on a loopback port.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Router, type RouterOptions, WorkerRegistry, type WorkerSpec } from '../../../src/index.js';
import { createOpenAINodeHandler, type OpenAIHandlerOptions } from '../../../src/openai/index.js';
import { type PdEngine, type PdEngineOptions, PdLedger, startPdEngine } from './pd-engines.js';

export const MODEL = 'stand-in/pd-model';

export interface Fleet {
  readonly url: string;
  readonly registry: WorkerRegistry;
  readonly router: Router;
  readonly prefill: PdEngine[];
  readonly decode: PdEngine[];
  readonly ledger: PdLedger;
  readonly warnings: Array<{ fields: Readonly<Record<string, unknown>>; message: string }>;
  /** Resolves when the gateway saw the client's connection close (`count` of them). */
  clientGone(count?: number): Promise<void>;
}

export interface FleetOptions {
  readonly engine: 'vllm' | 'sglang';
  readonly prefills?: number;
  readonly decodes?: number;
  readonly prefill?: (i: number) => Partial<PdEngineOptions>;
  readonly decode?: (i: number) => Partial<PdEngineOptions>;
  readonly prefillSpec?: (i: number, url: string) => Partial<WorkerSpec>;
  readonly decodeSpec?: (i: number, url: string) => Partial<WorkerSpec>;
  readonly handler?: Omit<OpenAIHandlerOptions, 'router'>;
  readonly router?: Partial<Omit<RouterOptions, 'registry'>>;
}

let cleanup: Array<() => Promise<void> | void> = [];

/** Runs `step` at the next `cleanUp()` (last registered, first run). */
export function onCleanup(step: () => Promise<void> | void): void {
  cleanup.push(step);
}

/** Stops what the test started: call it from `afterEach`. */
export async function cleanUp(): Promise<void> {
  const steps = cleanup.reverse();
  cleanup = [];
  for (const step of steps) await step();
}

export async function startFleet(o: FleetOptions): Promise<Fleet> {
  const ledger = new PdLedger();
  const prefill: PdEngine[] = [];
  const decode: PdEngine[] = [];
  for (let i = 0; i < (o.prefills ?? 1); i++)
    prefill.push(await startPdEngine({ kind: `${o.engine}-prefill`, ledger, ...o.prefill?.(i) }));
  for (let i = 0; i < (o.decodes ?? 1); i++)
    decode.push(await startPdEngine({ kind: `${o.engine}-decode`, ledger, ...o.decode?.(i) }));
  cleanup.push(() => Promise.all([...prefill, ...decode].map((e) => e.stop())).then(() => {}));
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  cleanup.push(() => registry.close());
  for (const [i, e] of prefill.entries())
    await registry.register({
      url: e.url,
      models: [MODEL],
      type: 'prefill',
      runtime: o.engine,
      ...o.prefillSpec?.(i, e.url),
    });
  for (const [i, e] of decode.entries())
    await registry.register({
      url: e.url,
      models: [MODEL],
      type: 'decode',
      runtime: o.engine,
      ...o.decodeSpec?.(i, e.url),
    });
  const router = new Router({
    registry,
    transport: { probe: async () => true },
    health: false,
    loadPolling: false,
    retry: { initialBackoffMs: 1, maxBackoffMs: 2 },
    ...o.router,
  });
  cleanup.push(() => router.close());
  const warnings: Fleet['warnings'] = [];
  const handler = createOpenAINodeHandler({
    router,
    logger: { warn: (fields, message) => warnings.push({ fields, message }) },
    ...o.handler,
  });
  let gone = 0;
  let goneWaiters: Array<() => void> = [];
  const server: Server = createServer((req, res) => {
    res.on('close', () => {
      gone++;
      for (const wake of goneWaiters) wake();
      goneWaiters = [];
    });
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const clientGone = async (count = 1): Promise<void> => {
    for (let i = 0; i < 100 && gone < count; i++)
      await new Promise<void>((resolve) => goneWaiters.push(resolve));
  };
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, registry, router, prefill, decode, ledger, warnings, clientGone };
}

export function post(
  fleet: Fleet,
  path: string,
  body: unknown,
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(`${fleet.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    ...(signal === undefined ? {} : { signal }),
  });
}

/** Lets the loopback I/O already under way be handled: a bounded number of event-loop turns. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
  await new Promise<void>((resolve) => setTimeout(resolve, 20));
  for (let i = 0; i < 20; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** A gate a stand-in holds its answer on until `open()`. */
export function gate(): { wait: () => Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { wait: () => opened, open };
}

export const all = (engines: readonly PdEngine[]) => engines.flatMap((e) => e.requests);
