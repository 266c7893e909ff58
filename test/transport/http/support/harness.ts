/**
 * Per-test arrangement for the transport tests: a registry to mint real `Worker`s, and fake
 * worker servers that are all closed after each test, whatever it did.
 */
import { afterEach, beforeEach } from 'vitest';
import { type Worker, WorkerRegistry, type WorkerSpec } from '../../../../src/index.js';
import { type FakeWorker, type Route, startFakeWorker } from './fake-worker.js';

export interface Harness {
  /** Starts a fake worker closed after the test. */
  serve(routes?: Record<string, Route>): Promise<FakeWorker>;
  /** Registers a worker (status `ready`) for `server` with extra spec fields. */
  workerFor(server: { url: string }, spec?: Omit<WorkerSpec, 'url'>): Promise<Worker>;
  /** A URL on 127.0.0.1 where nothing listens (connections are refused). */
  deadUrl(): Promise<string>;
}

/** Installs `beforeEach`/`afterEach` hooks and returns the harness they manage. */
export function useHarness(): Harness {
  let registry: WorkerRegistry | undefined;
  const servers: FakeWorker[] = [];

  beforeEach(async () => {
    registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  });

  afterEach(async () => {
    registry?.close();
    registry = undefined;
    await Promise.all(servers.splice(0).map((server) => server.close()));
  });

  return {
    async serve(routes = {}) {
      const server = await startFakeWorker(routes);
      servers.push(server);
      return server;
    },
    async workerFor(server, spec = {}) {
      return registry!.register({ ...spec, url: server.url });
    },
    async deadUrl() {
      const server = await startFakeWorker();
      await server.close();
      return server.url;
    },
  };
}
