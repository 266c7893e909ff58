import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type PrometheusSample, parsePrometheusText } from '../../../src/transport/http/index.js';
import { runs } from '../../helpers/fc-settings.js';
import { throwsCode } from '../../support/fixtures.js';
import { fixture } from './support/fake-worker.js';

/** The samples named `name`. */
function named(samples: readonly PrometheusSample[], name: string): PrometheusSample[] {
  return samples.filter((s) => s.name === name);
}

/** Parses one line and returns its only sample, or `undefined` when the line was skipped. */
function one(line: string): PrometheusSample | undefined {
  const { samples, skippedLines } = parsePrometheusText(line);
  expect(samples.length + skippedLines).toBe(1);
  return samples[0];
}

describe('parsePrometheusText on real scrapes', () => {
  it('reads a vLLM V1 scrape (two engines) with its gauges, counters and histograms', () => {
    // Act
    const { samples, types, skippedLines, truncated } = parsePrometheusText(fixture('vllm-v1.txt'));

    // Assert
    expect(skippedLines).toBe(0);
    expect(truncated).toBe(false);
    expect(samples).toHaveLength(71);
    expect(named(samples, 'vllm:num_requests_running')).toEqual([
      {
        name: 'vllm:num_requests_running',
        labels: { engine: '0', model_name: 'meta-llama/Llama-3.1-8B-Instruct' },
        value: 7,
        timestampMs: undefined,
      },
      {
        name: 'vllm:num_requests_running',
        labels: { engine: '1', model_name: 'meta-llama/Llama-3.1-8B-Instruct' },
        value: 5,
        timestampMs: undefined,
      },
    ]);
    const buckets = named(samples, 'vllm:time_to_first_token_seconds_bucket');
    expect(buckets.map((b) => b.labels.le)).toEqual([
      '0.001',
      '0.005',
      '0.02',
      '0.1',
      '0.5',
      '2.5',
      '+Inf',
    ]);
    expect(named(samples, 'vllm:time_to_first_token_seconds_count')[0]!.value).toBe(4410);
    expect(named(samples, 'vllm:time_to_first_token_seconds_sum')[0]!.value).toBeCloseTo(1123.9);
    expect(named(samples, 'process_virtual_memory_bytes')[0]!.value).toBe(1.3279612928e11);
    expect(named(samples, 'vllm:lora_requests_info')[0]!.labels).toEqual({
      max_lora: '1',
      running_lora_adapters: '',
      waiting_lora_adapters: '',
    });
    expect(types.get('vllm:time_to_first_token_seconds')).toBe('histogram');
    expect(types.get('vllm:generation_tokens_total')).toBe('counter');
    expect(types.get('vllm:kv_cache_usage_perc')).toBe('gauge');
  });

  it('keeps NaN and negative values of a vLLM V0 scrape as they are', () => {
    const { samples, skippedLines } = parsePrometheusText(fixture('vllm-v0.txt'));

    expect(skippedLines).toBe(0);
    expect(named(samples, 'vllm:spec_decode_draft_acceptance_rate')[0]!.value).toBeNaN();
    expect(named(samples, 'vllm:gpu_prefix_cache_hit_rate')[0]!.value).toBe(-1);
    expect(named(samples, 'vllm:prompt_tokens_total')[0]!.value).toBe(2_038_764);
  });

  it('reads an SGLang scrape, summary quantiles included', () => {
    const { samples, types } = parsePrometheusText(fixture('sglang.txt'));

    const quantiles = named(samples, 'sglang:e2e_request_latency_seconds');
    expect(quantiles.map((q) => q.labels.quantile)).toEqual(['0.5', '0.99']);
    expect(quantiles[1]!.value).toBeNaN();
    expect(named(samples, 'sglang:gen_throughput')[0]!.value).toBeCloseTo(812.54);
    expect(named(samples, 'sglang:func_latency_seconds_bucket').map((b) => b.labels.le)).toEqual([
      '0.05',
      '0.07500000000000001',
      '+Inf',
    ]);
    expect(types.get('sglang:e2e_request_latency_seconds')).toBe('summary');
  });

  it('reads timestamps and +Inf values of a re-exported SGLang scrape', () => {
    const { samples } = parsePrometheusText(fixture('sglang-exporter.txt'));

    const throughput = named(samples, 'sglang_gen_throughput');
    expect(throughput.map((s) => s.value)).toEqual([1520.25, Number.POSITIVE_INFINITY]);
    expect(throughput.every((s) => s.timestampMs === 1_754_118_300_123)).toBe(true);
  });

  it('unescapes quotes, backslashes and newlines in label values of a federation scrape', () => {
    const { samples, skippedLines } = parsePrometheusText(fixture('federate.txt'));

    expect(skippedLines).toBe(0);
    const service = named(samples, 'windows_service_info')[0]!;
    expect(service.labels.display_name).toBe('NVIDIA "Display" Container LS');
    expect(service.labels.path_name).toBe(
      'C:\\Windows\\System32\\DriverStore\\NVDisplay.Container.exe -s NVDisplay.ContainerLocalSystem',
    );
    expect(named(samples, 'windows_textfile_mtime_seconds')[0]!.labels.file).toBe(
      'two\nlines.prom',
    );
    expect(named(samples, 'up').map((s) => s.timestampMs)).toEqual([1_754_118_301_000, -1]);
    expect(named(samples, 'vllm:kv_cache_usage_perc')[1]!.value).toBe(0.12);
  });

  it('reads Windows line endings exactly like Unix ones', () => {
    const text = fixture('vllm-v1.txt');

    const crlf = parsePrometheusText(text.replaceAll('\n', '\r\n'));

    expect(crlf.samples).toEqual(parsePrometheusText(text).samples);
    expect(crlf.skippedLines).toBe(0);
  });
});

describe('parsePrometheusText, line by line', () => {
  it.each([
    ['a bare name', 'up 1', 'up', {}, 1],
    ['an empty label set', 'up{} 1', 'up', {}, 1],
    ['a trailing comma', 'up{job="a",} 1', 'up', { job: 'a' }, 1],
    ['spaces around label pairs', 'up{ job = "a" , x="b" }  1', 'up', { job: 'a', x: 'b' }, 1],
    ['a tab before the value', 'up\t1', 'up', {}, 1],
    ['leading blanks', '   up 1', 'up', {}, 1],
    ['colons in the name', 'vllm:x_y:z 2', 'vllm:x_y:z', {}, 2],
    ['an exponent', 'a 1.5e+3', 'a', {}, 1500],
    ['a negative exponent', 'a -1.5E-3', 'a', {}, -0.0015],
    ['a leading dot', 'a .5', 'a', {}, 0.5],
    ['+Inf', 'a +Inf', 'a', {}, Number.POSITIVE_INFINITY],
    ['-Inf', 'a -Inf', 'a', {}, Number.NEGATIVE_INFINITY],
    ['Inf in lower case', 'a inf', 'a', {}, Number.POSITIVE_INFINITY],
    ['NaN', 'a NaN', 'a', {}, Number.NaN],
    ['nan in lower case', 'a nan', 'a', {}, Number.NaN],
    ['an OpenMetrics exemplar', 'a_total 3 # {trace_id="abc"} 1.0', 'a_total', {}, 3],
    ['a quoted metric name', '{"my.metric","a.b"="1"} 2', 'my.metric', { 'a.b': '1' }, 2],
    ['a quoted name after labels', '{x="1","my.metric"} 2', 'my.metric', { x: '1' }, 2],
    ['an unknown escape, kept', 'a{x="t\\tab"} 1', 'a', { x: 't\\tab' }, 1],
  ])('reads %s', (_label, line, name, labels, value) => {
    // Act
    const sample = one(line);

    // Assert
    expect(sample?.name).toBe(name);
    expect({ ...sample?.labels }).toEqual({ ...labels });
    expect(sample?.value).toBe(value);
  });

  it('reads labels into an object without a prototype', () => {
    const sample = one('a{__proto__="p",constructor="c"} 1')!;

    expect(Object.getPrototypeOf(sample.labels)).toBeNull();
    expect(Object.entries(sample.labels)).toEqual([
      ['__proto__', 'p'],
      ['constructor', 'c'],
    ]);
  });

  it('reads an integer timestamp, negative ones included', () => {
    expect(one('a 1 1754118300123')?.timestampMs).toBe(1_754_118_300_123);
    expect(one('a 1 -5')?.timestampMs).toBe(-5);
    expect(one('a 1')?.timestampMs).toBeUndefined();
  });

  it.each([
    ['HTML', '<html><body>502</body></html>'],
    ['JSON', '{"object":"list","data":[]}'],
    ['a name without value', 'up'],
    ['a name and blanks', 'up   '],
    ['a value with a suffix', 'up 12abc'],
    ['a hex value', 'up 0x10'],
    ['an empty label set without value', 'up{}'],
    ['an unclosed label set', 'up{job="a" 1'],
    ['an unclosed label value', 'up{job="a} 1'],
    ['an unquoted label value', 'up{job=a} 1'],
    ['a dash in a label name', 'up{my-label="a"} 1'],
    ['a colon in a label name', 'up{a:b="a"} 1'],
    ['a repeated label name', 'up{a="1",a="2"} 1'],
    ['a missing comma', 'up{a="1" b="2"} 1'],
    ['two names', 'up{"other"} 1'],
    ['no name at all', '{a="1"} 1'],
    ['an empty quoted name', '{""} 1'],
    ['a dangling escape', 'up{a="x\\'],
    ['a float timestamp', 'up 1 1.5'],
    ['three tokens after the name', 'up 1 2 3'],
    ['a digit first', '1up 2'],
    ['a name glued to its value', 'up1'],
    ['control characters', '\u0000\u0001\u0002 1'],
  ])('skips %s and counts it', (_label, line) => {
    // Act
    const { samples, skippedLines } = parsePrometheusText(line);

    // Assert
    expect(samples).toEqual([]);
    expect(skippedLines).toBe(1);
  });

  it('ignores comments and blank lines without counting them as skipped', () => {
    const text = [
      '# HELP up Whether the target is up, with a \\\\ and a \\n.',
      '#    a free-form comment',
      '#',
      '',
      '   ',
      '# TYPE up gauge',
      'up 1',
    ].join('\n');

    const { samples, skippedLines, types } = parsePrometheusText(text);

    expect(samples).toHaveLength(1);
    expect(skippedLines).toBe(0);
    expect(types.get('up')).toBe('gauge');
  });

  it('records valid # TYPE lines only, the last one winning', () => {
    const text = [
      '# TYPE a counter',
      '# TYPE a gauge',
      '# TYPE b bogus',
      '# TYPE c',
      '# TYPE "d.e" histogram',
      '# TYPE f gauge extra',
    ].join('\n');

    const { types } = parsePrometheusText(text);

    expect([...types]).toEqual([
      ['a', 'gauge'],
      ['d.e', 'histogram'],
    ]);
  });

  it('stops at # EOF', () => {
    const { samples } = parsePrometheusText('a 1\n# EOF\nb 2\n');

    expect(samples.map((s) => s.name)).toEqual(['a']);
  });
});

describe('parsePrometheusText bounds and filter', () => {
  it('stops after maxLines lines and says so', () => {
    const text = 'a 1\nb 2\nc 3\n';

    const result = parsePrometheusText(text, { maxLines: 2 });

    expect(result.samples.map((s) => s.name)).toEqual(['a', 'b']);
    expect(result.truncated).toBe(true);
    expect(parsePrometheusText(text, { maxLines: 3 }).truncated).toBe(false);
  });

  it('reads at most maxLength characters and drops the line the bound cuts through', () => {
    const text = 'a 1\nb 22\nc 3\n';

    // "a 1\nb 2" would read b as 2: the cut line is dropped instead.
    expect(parsePrometheusText(text, { maxLength: 7 }).samples.map((s) => s.value)).toEqual([1]);
    // A bound that falls on a line end keeps the whole line.
    expect(parsePrometheusText(text, { maxLength: 8 }).samples.map((s) => s.value)).toEqual([
      1, 22,
    ]);
    expect(parsePrometheusText(text, { maxLength: 2 }).samples).toEqual([]);
    expect(parsePrometheusText(text, { maxLength: 7 }).truncated).toBe(true);
    expect(parsePrometheusText(text, { maxLength: text.length }).truncated).toBe(false);
  });

  it('keeps only the samples whose name passes the filter, without counting the others', () => {
    const text = `${fixture('vllm-v1.txt')}\nvllm:num_requests_waiting{ 1\nvllm:other{ 1\n<html>\n`;

    const result = parsePrometheusText(text, {
      filter: (name) => name === 'vllm:num_requests_waiting',
    });

    expect(result.samples.map((s) => s.value)).toEqual([2, 0]);
    // The first broken line passes the filter and is then rejected; the second is filtered out
    // before its labels are read; <html> has no name at all.
    expect(result.skippedLines).toBe(2);
  });

  it('skips binary garbage line by line without throwing', () => {
    const bytes = new Uint8Array(200_000);
    let x = 12345;
    for (let i = 0; i < bytes.length; i++) {
      x = (x * 1103515245 + 12345) >>> 0;
      bytes[i] = x >>> 24;
    }
    const text = new TextDecoder().decode(bytes);

    const result = parsePrometheusText(text);

    expect(result.samples.length).toBeLessThanOrEqual(result.skippedLines + 10);
    expect(result.truncated).toBe(false);
  });

  it.each([
    ['text', () => parsePrometheusText(42 as unknown as string), 'parsePrometheusText.text'],
    [
      'maxLines',
      () => parsePrometheusText('', { maxLines: -1 }),
      'parsePrometheusText.options.maxLines',
    ],
    [
      'maxLength',
      () => parsePrometheusText('', { maxLength: 1.5 }),
      'parsePrometheusText.options.maxLength',
    ],
    [
      'filter',
      () => parsePrometheusText('', { filter: 'vllm' as unknown as () => boolean }),
      'parsePrometheusText.options.filter',
    ],
    [
      'options',
      () => parsePrometheusText('', null as unknown as object),
      'parsePrometheusText.options',
    ],
  ])('rejects a bad %s with INVALID_ARGUMENT naming it', (_label, call, field) => {
    const error = throwsCode(call, 'INVALID_ARGUMENT');

    expect(error.message.startsWith(`${field} must be`)).toBe(true);
  });
});

describe('parsePrometheusText properties', () => {
  const labelName = fc.stringMatching(/^[a-zA-Z_][a-zA-Z0-9_]{0,8}$/);
  const metricName = fc.stringMatching(/^[a-zA-Z_:][a-zA-Z0-9_:]{0,12}$/);
  const value = fc.oneof(
    fc.double(),
    fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY),
  );

  function escapeLabel(text: string): string {
    return text.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n');
  }

  function render(v: number): string {
    if (Number.isNaN(v)) return 'NaN';
    if (v === Number.POSITIVE_INFINITY) return '+Inf';
    if (v === Number.NEGATIVE_INFINITY) return '-Inf';
    return String(v);
  }

  it('reads back any sample written in the text format, whatever its label values', () => {
    fc.assert(
      fc.property(
        metricName,
        fc.uniqueArray(fc.tuple(labelName, fc.string({ unit: 'grapheme' })), {
          selector: ([name]) => name,
          maxLength: 4,
        }),
        value,
        fc.option(fc.integer({ min: -1e12, max: 1e13 }), { nil: undefined }),
        fc.constantFrom('\n', '\r\n'),
        (name, labels, v, timestamp, eol) => {
          const set = labels.map(([k, text]) => `${k}="${escapeLabel(text)}"`).join(',');
          const line = `${name}{${set}} ${render(v)}${timestamp === undefined ? '' : ` ${timestamp}`}`;

          const { samples } = parsePrometheusText(`# HELP x y${eol}${line}${eol}`);

          expect(samples).toHaveLength(1);
          expect(samples[0]!.name).toBe(name);
          expect({ ...samples[0]!.labels }).toEqual(Object.fromEntries(labels));
          // The text format has no negative zero: -0 is written, and read back, as 0.
          const read = samples[0]!.value;
          expect(read === 0 ? 0 : read).toEqual(v === 0 ? 0 : v);
          expect(samples[0]!.timestampMs).toBe(timestamp);
        },
      ),
      runs(300, 3_000),
    );
  });

  it('never throws, and every line is a sample, skipped, blank or a comment', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 400 }), (text) => {
        const { samples, skippedLines } = parsePrometheusText(text);

        expect(samples.length + skippedLines).toBeLessThanOrEqual(text.split('\n').length);
      }),
      runs(500, 5_000),
    );
  });
});
