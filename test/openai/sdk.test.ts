/**
 * The official `openai` SDK as the client of the front, on every framework: chat and completions,
 * streamed with `for await` and not, aborted with an `AbortController`.
 */
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { FRAMEWORKS, type Gateway, startGateway } from './support/gateway.js';

let gateway: Gateway | undefined;
afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
});

const client = (g: Gateway) =>
  new OpenAI({ baseURL: `${g.url}/v1`, apiKey: 'client-key', maxRetries: 0 });

describe.each([...FRAMEWORKS, 'express-json' as const])(
  'the openai SDK through %s',
  (framework) => {
    it('streams a chat completion with for await', async () => {
      gateway = await startGateway({ framework });
      const stream = await client(gateway).chat.completions.create({
        model: gateway.engines[0]!.model,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Say hello.' }] }],
        stream: true,
        max_tokens: 5,
      });
      let text = '';
      let chunks = 0;
      for await (const chunk of stream) {
        chunks++;
        text += chunk.choices[0]?.delta.content ?? '';
      }
      expect(text).toBe('tok0 tok1 tok2 tok3 tok4 ');
      // role chunk + 5 + finish: the usage chunk the front asked for is cut out again
      expect(chunks).toBe(7);
      const sent = gateway.engines.flatMap((e) => e.requests)[0]!;
      expect(sent.body!.stream_options).toEqual({ include_usage: true });
      expect(sent.headers.authorization).toBeUndefined();
    });

    it('answers a completion without streaming', async () => {
      gateway = await startGateway({ framework });
      const answer = await client(gateway).completions.create({
        model: gateway.engines[0]!.model,
        prompt: 'Once upon a time',
        max_tokens: 3,
      });
      expect(answer.choices[0]!.text).toBe('tok0 tok1 tok2 ');
      expect(answer.usage?.completion_tokens).toBe(3);
    });

    it('lists the fleet’s models', async () => {
      gateway = await startGateway({ framework });
      const models = await client(gateway).models.list();
      expect(models.data.map((m) => m.id)).toEqual([gateway.engines[0]!.model]);
    });

    it('aborting the stream with an AbortController aborts the engine’s answer', async () => {
      const warnings: string[] = [];
      const logger = { warn: (_fields: object, message: string) => void warnings.push(message) };
      gateway = await startGateway({
        framework,
        engine: { chunkDelayMs: 20 },
        handler: { logger },
      });
      const controller = new AbortController();
      const stream = await client(gateway).chat.completions.create(
        {
          model: gateway.engines[0]!.model,
          messages: [{ role: 'user', content: 'long' }],
          stream: true,
          max_tokens: 10_000,
        },
        { signal: controller.signal },
      );
      let seen = 0;
      // The SDK ends the iteration quietly on its own abort.
      for await (const _ of stream) if (++seen === 3) controller.abort();
      expect(seen).toBeLessThan(10);
      const engine = gateway.engines.find((e) => e.requests.length > 0)!;
      for (let i = 0; i < 200 && engine.abandoned === 0; i++)
        await new Promise((r) => setTimeout(r, 10));
      expect(engine.abandoned).toBe(1);
      for (let i = 0; i < 100 && gateway.registry.getAll().some((w) => w.load > 0); i++)
        await new Promise((r) => setTimeout(r, 5));
      expect(gateway.registry.getAll().map((w) => w.load)).toEqual([0, 0]);
      expect(warnings).toEqual([]); // a client leaving is not an answer that broke
    });
  },
);
