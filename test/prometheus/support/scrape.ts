/**
 * A real `/metrics` endpoint over a prom-client registry, and a scrape of it read back with the
 * project's own text-format parser.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { PrometheusSample } from '../../../src/transport/http/prometheus-sample.js';
import { parsePrometheusText } from '../../../src/transport/http/prometheus-text.js';

/** What one scrape served. */
export interface Scrape {
  readonly samples: readonly PrometheusSample[];
  /** The value of the sample named `name` whose labels are exactly `labels`, or `undefined`. */
  value(name: string, labels?: Record<string, string>): number | undefined;
  /** The samples named `name`. */
  series(name: string): PrometheusSample[];
}

/** Serves `registry.metrics()` on 127.0.0.1 (any port) at `/metrics`. */
export async function metricsServer(
  registry: Registry,
): Promise<{ url: string; server: Server; scrape(): Promise<Scrape>; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'content-type': registry.contentType });
        res.end(text);
      },
      (error: unknown) => {
        res.writeHead(500).end(String(error));
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
  return {
    url,
    server,
    scrape: async () => {
      const response = await fetch(url);
      if (response.status !== 200) throw new Error(`scrape answered ${response.status}`);
      return readScrape(await response.text());
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A scrape's text, parsed. */
export function readScrape(text: string): Scrape {
  const { samples, skippedLines } = parsePrometheusText(text);
  if (skippedLines !== 0) throw new Error(`${skippedLines} lines of the scrape did not parse`);
  const same = (a: Readonly<Record<string, string>>, b: Record<string, string>): boolean => {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
  };
  return {
    samples,
    value: (name, labels = {}) =>
      samples.find((s) => s.name === name && same(s.labels, labels))?.value,
    series: (name) => samples.filter((s) => s.name === name),
  };
}
