import { describe, expect, it } from 'vitest';
import type { RuntimeType } from '../../../src/index.js';
import { LoadReader, type ScrapedWorker } from '../../../src/transport/http/load-reader.js';
import { MAX_LORA_SERIES } from '../../../src/transport/http/lora-metrics.js';
import { MAX_ADAPTERS_PER_REPORT } from '../../../src/workers/load-report.js';
import { fixture } from './support/fake-worker.js';

function worker(runtime: RuntimeType, extra: Partial<ScrapedWorker> = {}): ScrapedWorker {
  return { url: 'http://10.0.0.7:8000', runtime, ...extra };
}

function read(text: string, runtime: RuntimeType = 'vllm') {
  return new LoadReader(4).read(text, worker(runtime), 1_000);
}

const RUNNING = 'vllm:num_requests_running{engine="0"} 2\n';

describe('LoadReader: LoRA adapters of a vLLM scrape', () => {
  it('takes the newest lora_requests_info series, not the stale ones', () => {
    const report = read(fixture('vllm-v1-lora.txt'));

    expect(report).toEqual({
      runningRequests: 3,
      waitingRequests: 1,
      tokenUsage: 0.25,
      at: 1_000,
      adapters: { running: ['sql-lora', 'chat-lora'], waiting: ['tool-lora'], maxAdapters: 4 },
    });
  });

  it('reads the residency gauges: GPU-resident adapters only, and max_gpu_lora_adapters over max_lora', () => {
    const report = read(fixture('vllm-lora-residency.txt'));

    expect(report?.adapters).toEqual({
      running: ['sql-lora'],
      waiting: [],
      resident: ['sql-lora', 'chat-lora'],
      maxAdapters: 3,
    });
  });

  it('says nothing of adapters when the family is absent (LoRA off or unused)', () => {
    const report = read(fixture('vllm-v1.txt').replace(/^vllm:lora_requests_info.*$/m, ''));

    expect(report).toBeDefined();
    expect(report).not.toHaveProperty('adapters');
  });

  it('reads an empty residency family as no adapter resident', () => {
    const text = `${RUNNING}vllm:max_gpu_lora_adapters 2\nvllm:lora_adapter_loaded{adapter_name="a",level="gpu",pinned="false"} 0\n`;

    expect(read(text)?.adapters).toEqual({
      running: [],
      waiting: [],
      resident: [],
      maxAdapters: 2,
    });
  });

  it('trims and deduplicates names and drops entries that are not model ids', () => {
    const long = 'x'.repeat(300);
    const text = `${RUNNING}vllm:lora_requests_info{max_lora="abc",running_lora_adapters=" a , a,,${long},b ",waiting_lora_adapters=","} 5\n`;

    expect(read(text)?.adapters).toEqual({ running: ['a', 'b'], waiting: [] });
  });

  it('is not read for an SGLang worker', () => {
    const text =
      'sglang:num_running_reqs 1\nvllm:lora_requests_info{running_lora_adapters="a"} 5\n';

    expect(read(text, 'sglang')).not.toHaveProperty('adapters');
  });

  it('skips series of another data-parallel rank', () => {
    const text =
      `${RUNNING}vllm:lora_requests_info{engine="1",running_lora_adapters="other"} 9\n` +
      'vllm:lora_requests_info{engine="0",running_lora_adapters="mine"} 5\n';

    const report = new LoadReader(4).read(text, worker('vllm', { dpRank: 0 }), 1);

    expect(report?.adapters?.running).toEqual(['mine']);
  });
});

describe('LoadReader: hostile LoRA metrics stay bounded', () => {
  it('caps the names of a huge label value', () => {
    const names = Array.from({ length: 5_000 }, (_, i) => `lora-${i}`).join(',');
    const text = `${RUNNING}vllm:lora_requests_info{running_lora_adapters="${names}",waiting_lora_adapters=""} 5\n`;

    const adapters = read(text)?.adapters;

    expect(adapters?.running).toHaveLength(MAX_ADAPTERS_PER_REPORT);
    expect(adapters?.running[0]).toBe('lora-0');
  });

  it('reads at most MAX_LORA_SERIES series of thousands', () => {
    const lines: string[] = [RUNNING];
    for (let i = 0; i < MAX_LORA_SERIES + 2_000; i++) {
      lines.push(
        `vllm:lora_requests_info{running_lora_adapters="a${i}",waiting_lora_adapters=""} ${i}`,
      );
    }
    for (let i = 0; i < 3_000; i++) {
      lines.push(`vllm:lora_adapter_loaded{adapter_name="r${i}",level="gpu",pinned="false"} 1`);
    }

    const adapters = read(lines.join('\n'))?.adapters;

    // Series past the bound are skipped: the newest read is the last one before it.
    expect(adapters?.running).toEqual([`a${MAX_LORA_SERIES - 1}`]);
    expect(adapters?.resident).toBeUndefined();
  });

  it('caps the resident list', () => {
    const lines: string[] = [RUNNING];
    for (let i = 0; i < MAX_ADAPTERS_PER_REPORT + 500; i++) {
      lines.push(`vllm:lora_adapter_loaded{adapter_name="r${i}",level="gpu",pinned="false"} 1`);
    }

    expect(read(lines.join('\n'))?.adapters?.resident).toHaveLength(MAX_ADAPTERS_PER_REPORT);
  });

  it('ignores non-finite info values and absurd slot counts', () => {
    const text =
      `${RUNNING}vllm:lora_requests_info{running_lora_adapters="nan"} NaN\n` +
      'vllm:lora_requests_info{running_lora_adapters="ok"} 1\nvllm:max_gpu_lora_adapters 1e12\n';

    expect(read(text)?.adapters).toEqual({ running: ['ok'], waiting: [] });
  });
});
