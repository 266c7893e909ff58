import { describe, expect, it } from 'vitest';
import { MAX_URL_LENGTH, parseWorkerUrl } from '../../src/index.js';
import { hugeString, throwsCode } from '../support/fixtures.js';

describe('parseWorkerUrl: normalisation', () => {
  it.each([
    // [input, url, baseUrl, connection, dpRank]
    ['localhost:8000', 'http://localhost:8000', 'http://localhost:8000', 'http', undefined],
    ['10.0.0.1:8000', 'http://10.0.0.1:8000', 'http://10.0.0.1:8000', 'http', undefined],
    [
      'Worker-A.Example.com:9000',
      'http://worker-a.example.com:9000',
      'http://worker-a.example.com:9000',
      'http',
      undefined,
    ],
    ['HTTP://Host:8000', 'http://host:8000', 'http://host:8000', 'http', undefined],
    [
      'HTTPS://EXAMPLE.COM:8443/v1',
      'https://example.com:8443/v1',
      'https://example.com:8443/v1',
      'http',
      undefined,
    ],
    ['http://host:80', 'http://host', 'http://host', 'http', undefined],
    ['https://host:443', 'https://host', 'https://host', 'http', undefined],
    ['http://host:443', 'http://host:443', 'http://host:443', 'http', undefined],
    ['HTTP://Host:80/', 'http://host', 'http://host', 'http', undefined],
    ['http://host:8000/', 'http://host:8000', 'http://host:8000', 'http', undefined],
    [
      'http://host:8000/api/v1/',
      'http://host:8000/api/v1',
      'http://host:8000/api/v1',
      'http',
      undefined,
    ],
    ['http://host', 'http://host', 'http://host', 'http', undefined],
    ['http://[::1]:8000', 'http://[::1]:8000', 'http://[::1]:8000', 'http', undefined],
    ['[::1]:8000', 'http://[::1]:8000', 'http://[::1]:8000', 'http', undefined],
    ['http://[FE80::1]:80/', 'http://[fe80::1]', 'http://[fe80::1]', 'http', undefined],
    ['http://host:8000@3', 'http://host:8000@3', 'http://host:8000', 'http', 3],
    ['host:8000@0', 'http://host:8000@0', 'http://host:8000', 'http', 0],
    ['HTTP://Host:80/@7', 'http://host@7', 'http://host', 'http', 7],
    ['grpc://Host:50051', 'grpc://host:50051', 'grpc://host:50051', 'grpc', undefined],
    ['GRPCS://host:443/', 'grpcs://host:443', 'grpcs://host:443', 'grpc', undefined],
    ['grpc://[::1]:50051', 'grpc://[::1]:50051', 'grpc://[::1]:50051', 'grpc', undefined],
    ['grpc://host:50051@2', 'grpc://host:50051@2', 'grpc://host:50051', 'grpc', 2],
  ] as const)('%s → %s', (input, url, baseUrl, connection, dpRank) => {
    // Act
    const parsed = parseWorkerUrl(input);

    // Assert
    expect(parsed).toEqual({ url, baseUrl, connection, dpRank });
    expect(Object.isFrozen(parsed)).toBe(true);
  });

  it('normalisation is idempotent: parsing a normalised URL returns it unchanged', () => {
    for (const input of ['HTTP://Host:80/', 'localhost:8000@2', 'GRPC://H:1', 'https://x:443/a/']) {
      const once = parseWorkerUrl(input).url;
      expect(parseWorkerUrl(once).url).toBe(once);
    }
  });

  it('spellings of the same worker normalise to the same identity', () => {
    const spellings = ['host:80', 'http://host', 'HTTP://HOST:80/', 'http://Host/'];
    expect(new Set(spellings.map((s) => parseWorkerUrl(s).url))).toEqual(new Set(['http://host']));
  });
});

describe('parseWorkerUrl: rejection', () => {
  it.each([
    ['an ftp URL', 'ftp://host:21', /unsupported scheme 'ftp'/],
    ['a ws URL', 'ws://host:80', /unsupported scheme 'ws'/],
    ['credentials', 'http://user:pass@host:8000', /credentials are not allowed/],
    ['a user name', 'http://user@host:8000', /credentials are not allowed/],
    ['a query string', 'http://host:8000/?a=1', /query strings are not allowed/],
    ['an empty query', 'http://host:8000/?', /query strings are not allowed/],
    ['a fragment', 'http://host:8000/#frag', /fragments are not allowed/],
    ['an empty fragment', 'http://host:8000#', /fragments are not allowed/],
    ['port 0', 'http://host:0', /port must be between 1 and 65535/],
    ['bare port 0', 'host:0', /port must be between 1 and 65535/],
    ['port 65536', 'http://host:65536', /not a valid URL/],
    ['bare port 65536', 'host:65536', /not a valid URL/],
    ['a bare host without a port', 'localhost', /expected scheme:\/\/host:port or host:port/],
    ['a bare path', '/v1/completions', /expected scheme:\/\/host:port or host:port/],
    ['a gRPC URL without a port', 'grpc://host', /a gRPC URL needs a port/],
    ['a gRPC URL with a path', 'grpc://host:50051/svc', /a gRPC URL cannot have a path/],
    ['an inner space', 'http://ho st:8000', /contains whitespace/],
    ['an inner tab', 'http://host:8000/a\tb', /contains whitespace/],
    ['an inner newline', 'http://host:8000\n/x', /contains whitespace/],
    ['an empty string', '', /empty/],
    ['only whitespace', '   ', /empty/],
    ['a lone high surrogate', 'http://host\uD800:8000', /unpaired surrogate/],
    ['a lone low surrogate', 'http://host:8000/\uDC00', /unpaired surrogate/],
    [
      'one character too many',
      `http://h:1/${'a'.repeat(MAX_URL_LENGTH)}`,
      /longer than 2048 characters/,
    ],
    ['a 10 MB string', hugeString(10), /longer than 2048 characters/],
  ])('rejects %s with INVALID_URL saying why', (_label, input, why) => {
    const error = throwsCode(() => parseWorkerUrl(input), 'INVALID_URL');
    expect(error.message).toMatch(why);
    expect(error.message).toMatch(/^invalid worker URL /);
  });

  it('keeps the error message short for a 10 MB input', () => {
    const error = throwsCode(() => parseWorkerUrl(hugeString(10)), 'INVALID_URL');
    expect(error.message.length).toBeLessThan(200);
  });

  it.each([
    ['a number', 8000],
    ['null', null],
    ['undefined', undefined],
    ['an object', { url: 'http://host:8000' }],
    ['a URL object', new URL('http://host:8000')],
  ])('rejects %s with INVALID_URL "expected a string"', (_label, input) => {
    const error = throwsCode(() => parseWorkerUrl(input), 'INVALID_URL');
    expect(error.message).toMatch(/expected a string/);
  });

  it('accepts a URL of exactly MAX_URL_LENGTH characters', () => {
    // Arrange
    const prefix = 'http://h:1/';
    const input = prefix + 'a'.repeat(MAX_URL_LENGTH - prefix.length);

    // Act
    const parsed = parseWorkerUrl(input);

    // Assert
    expect(input.length).toBe(MAX_URL_LENGTH);
    expect(parsed.url).toBe(input);
  });
});
