/**
 * A gateway under test: stand-in vLLM engines, a registry and a started `Router` over them, and
 * the OpenAI front served by a real server — Node's `http`, Express, Fastify or Hono (on
 * `@hono/node-server`) — on a free loopback port.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve as serveHono } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import {
  Router,
  type RouterOptions,
  type RuntimeType,
  WorkerRegistry,
} from '../../../src/index.js';
import {
  createOpenAIHandler,
  createOpenAINodeHandler,
  type OpenAIHandlerOptions,
  openAIExpress,
  openAIFastify,
} from '../../../src/openai/index.js';
import {
  type StandInEngine,
  type StandInEngineOptions,
  startStandInEngine,
} from '../../support/vllm-engine.js';

export type Framework = 'node' | 'express' | 'express-json' | 'fastify' | 'hono';
export const FRAMEWORKS: readonly Framework[] = ['node', 'express', 'fastify', 'hono'];

export interface Gateway {
  /** `http://127.0.0.1:<port>` of the gateway. */
  readonly url: string;
  readonly engines: StandInEngine[];
  readonly registry: WorkerRegistry;
  readonly router: Router;
  close(): Promise<void>;
}

export interface GatewayOptions {
  readonly framework?: Framework;
  readonly engines?: number;
  /** Every engine's options, or each one's by its index. */
  readonly engine?: StandInEngineOptions | ((index: number) => StandInEngineOptions);
  readonly handler?: Omit<OpenAIHandlerOptions, 'router'>;
  /** Each engine's runtime, by its index. @defaultValue 'vllm' */
  readonly runtime?: (index: number) => RuntimeType;
  /** Register each engine as this many data-parallel rank workers (`url@0` …). */
  readonly ranks?: number;
  readonly router?: Partial<Omit<RouterOptions, 'registry'>>;
}

/** Engines all ready (no health loop), a router in front, the front on a real server. */
export async function startGateway(options: GatewayOptions = {}): Promise<Gateway> {
  const engines: StandInEngine[] = [];
  for (let i = 0; i < (options.engines ?? 2); i++)
    engines.push(
      await startStandInEngine(
        typeof options.engine === 'function' ? options.engine(i) : options.engine,
      ),
    );
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  for (const [i, engine] of engines.entries()) {
    const ranks = options.ranks;
    for (let rank = 0; rank < (ranks ?? 1); rank++)
      await registry.register({
        url: ranks === undefined ? engine.url : `${engine.url}@${rank}`,
        models: [engine.model],
        runtime: options.runtime?.(i) ?? 'vllm',
        ...(ranks === undefined ? {} : { dpSize: ranks }),
      });
  }
  const router = new Router({
    registry,
    transport: { probe: async () => true },
    health: false,
    loadPolling: false,
    retry: { initialBackoffMs: 1, maxBackoffMs: 5 },
    ...options.router,
  });
  const handlerOptions: OpenAIHandlerOptions = { router, ...options.handler };
  const served = await serveWith(options.framework ?? 'node', handlerOptions);
  return {
    url: served.url,
    engines,
    registry,
    router,
    async close() {
      await served.close();
      await router.close();
      registry.close();
      await Promise.all(engines.map((engine) => engine.stop()));
    },
  };
}

interface Served {
  readonly url: string;
  close(): Promise<void>;
}

async function serveWith(framework: Framework, options: OpenAIHandlerOptions): Promise<Served> {
  switch (framework) {
    case 'node':
      return listen(createServer(createOpenAINodeHandler(options)));
    case 'express':
    case 'express-json': {
      const app = express();
      if (framework === 'express-json') app.use(express.json({ limit: '32mb' }));
      app.get('/other', (_req, res) => void res.send('other'));
      app.use(openAIExpress(options));
      return listen(createServer(app));
    }
    case 'fastify': {
      const app = Fastify();
      app.get('/other', async () => 'other');
      await app.register(openAIFastify, options);
      await app.listen({ port: 0, host: '127.0.0.1' });
      const port = (app.server.address() as AddressInfo).port;
      return {
        url: `http://127.0.0.1:${port}`,
        close: async () => {
          app.server.closeAllConnections();
          await app.close();
        },
      };
    }
    case 'hono': {
      const app = new Hono();
      app.get('/other', (c) => c.text('other'));
      app.mount('/', createOpenAIHandler(options));
      const server = await new Promise<Server>((resolve) => {
        const s = serveHono({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () =>
          resolve(s as Server),
        );
      });
      return listening(server);
    }
  }
}

async function listen(server: Server): Promise<Served> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return listening(server);
}

function listening(server: Server): Served {
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
