/**
 * A real `dnsmasq` for the DNS discovery tests: started on a free loopback port, answering only
 * from a hosts file the test rewrites (SIGHUP reloads it), with SRV records from the command
 * line, NXDOMAIN for unknown names under its local domains, and SERVFAIL for the domains
 * forwarded to a stand-in upstream that answers nothing else. `.ci/run` installs dnsmasq when
 * the machine has none.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

/** Where dnsmasq is: on the PATH, or in /usr/sbin (not on every user's PATH). */
function dnsmasqPath(): string | undefined {
  for (const candidate of ['dnsmasq', '/usr/sbin/dnsmasq']) {
    if (spawnSync(candidate, ['--version'], { stdio: 'ignore' }).status === 0) return candidate;
  }
  return undefined;
}

const DNSMASQ = dnsmasqPath();

/** Whether `dnsmasq` can be run here. */
export function hasDnsmasq(): boolean {
  return DNSMASQ !== undefined;
}

/**
 * Whether to skip the suites: only where dnsmasq is not installed, and never in CI
 * (`CI=true`), where a missing server must fail them.
 */
export const noDnsmasq = !hasDnsmasq() && process.env.CI !== 'true';
if (noDnsmasq)
  console.warn(
    'dnsmasq is not installed: the DNS discovery tests against a real DNS server are skipped ' +
      '(apt-get install dnsmasq-base; with CI=true they fail instead)',
  );

/** A free UDP port on 127.0.0.1 (free when asked; the server binds it right after). */
export async function freeUdpPort(): Promise<number> {
  const socket = createSocket('udp4');
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  const { port } = socket.address();
  socket.close();
  return port;
}

/** A stand-in upstream that answers every query with SERVFAIL. */
async function servfailUpstream(): Promise<{ port: number; close(): void }> {
  const socket = createSocket('udp4');
  socket.on('message', (query, peer) => {
    if (query.length < 12) return;
    const answer = Buffer.from(query);
    answer[2] = 0x80 | (query[2]! & 0x79); // QR, the query's opcode and RD
    answer[3] = 0x80 | 2; // RA, RCODE 2 (SERVFAIL)
    answer.writeUInt16BE(0, 6); // no answer, authority nor additional records
    answer.writeUInt16BE(0, 8);
    answer.writeUInt16BE(0, 10);
    socket.send(answer, peer.port, peer.address);
  });
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  return { port: socket.address().port, close: () => socket.close() };
}

export interface DnsmasqOptions {
  /** Hosts-file lines (`10.0.0.1 w.svc.test`). */
  readonly hosts?: readonly string[];
  /** `--srv-host` values (`_http._tcp.w.svc.test,a.svc.test,8000`). */
  readonly srv?: readonly string[];
  /** Domains answered only from local data: unknown names get NXDOMAIN. */
  readonly local?: readonly string[];
  /** Domains forwarded to an upstream that answers SERVFAIL. */
  readonly servfail?: readonly string[];
  /** TTL of the local answers, in seconds. */
  readonly ttl?: number;
  /** The port (default: a free one). */
  readonly port?: number;
}

export interface Dnsmasq {
  readonly port: number;
  /** `127.0.0.1:<port>`, for `servers`. */
  readonly server: string;
  /** Rewrites the hosts file and waits until dnsmasq has read it again (SIGHUP). */
  setHosts(lines: readonly string[]): Promise<void>;
  /** Sends `signal` (SIGKILL: the server is gone; SIGSTOP / SIGCONT: it stops answering, then resumes). */
  signal(signal: NodeJS.Signals): void;
  /** Kills the server (SIGKILL) and waits until it has exited: nothing answers on its port. */
  crash(): Promise<void>;
  /** Stops the server (and the SERVFAIL upstream) and waits for it to exit. Idempotent. */
  stop(): Promise<void>;
}

/** Waits (at most `ms`) until `test()` holds. */
async function until(test: () => boolean, ms: number): Promise<boolean> {
  for (let waited = 0; waited < ms; waited += 20) {
    if (test()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return test();
}

/**
 * Starts dnsmasq on a free loopback port and waits until it has read its hosts file (at most
 * 10 s); a port taken meanwhile is retried on another (at most 5 times).
 *
 * @throws when dnsmasq is not installed or does not come up.
 */
export async function startDnsmasq(options: DnsmasqOptions = {}): Promise<Dnsmasq> {
  if (DNSMASQ === undefined)
    throw new Error('dnsmasq is not installed (apt-get install dnsmasq-base)');
  const dir = mkdtempSync(join(tmpdir(), 'fleetroute-dnsmasq-'));
  const hostsFile = join(dir, 'hosts');
  writeFileSync(hostsFile, `${(options.hosts ?? []).join('\n')}\n`, { mode: 0o644 });
  const upstream = (options.servfail ?? []).length > 0 ? await servfailUpstream() : undefined;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = options.port ?? (await freeUdpPort());
    const args = [
      '--no-daemon',
      `--port=${port}`,
      '--listen-address=127.0.0.1',
      '--bind-interfaces',
      '--no-resolv',
      '--no-hosts',
      `--addn-hosts=${hostsFile}`,
      `--local-ttl=${options.ttl ?? 5}`,
      '--pid-file=',
      `--user=${userInfo().username}`,
      '--log-facility=-',
      ...(options.local ?? []).map((domain) => `--local=/${domain}/`),
      ...(options.srv ?? []).map((srv) => `--srv-host=${srv}`),
      ...(options.servfail ?? []).map((d) => `--server=/${d}/127.0.0.1#${upstream!.port}`),
    ];
    const child = spawn(DNSMASQ, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    let exited = false;
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      log = (log + chunk).slice(-65_536);
    });
    child.once('exit', () => {
      exited = true;
    });
    const reads = () => log.split(`read ${hostsFile}`).length - 1;
    if (await until(() => exited || reads() > 0, 10_000)) {
      if (!exited) return running(child, port, hostsFile, dir, upstream, reads, () => exited);
    }
    child.kill('SIGKILL');
    if (options.port !== undefined || !/in use/i.test(log)) {
      upstream?.close();
      throw new Error(`dnsmasq did not start on port ${port}: ${log.slice(-500)}`);
    }
  }
  upstream?.close();
  throw new Error('dnsmasq found no free port in 5 tries');
}

function running(
  child: ChildProcess,
  port: number,
  hostsFile: string,
  dir: string,
  upstream: { close(): void } | undefined,
  reads: () => number,
  exited: () => boolean,
): Dnsmasq {
  let stopped = false;
  return {
    port,
    server: `127.0.0.1:${port}`,
    setHosts: async (lines) => {
      const before = reads();
      writeFileSync(hostsFile, `${lines.join('\n')}\n`);
      child.kill('SIGHUP');
      if (!(await until(() => reads() > before, 10_000)))
        throw new Error('dnsmasq did not read its hosts file again');
    },
    signal: (signal) => {
      if (!exited()) child.kill(signal);
    },
    crash: async () => {
      const gone = exited() ? Promise.resolve() : once(child, 'exit');
      child.kill('SIGKILL');
      await gone;
    },
    stop: async () => {
      if (stopped) return;
      stopped = true;
      if (!exited()) {
        child.kill('SIGCONT'); // a stopped process cannot act on SIGTERM
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 2_000);
        if (!exited()) await once(child, 'exit');
        clearTimeout(timer);
      }
      upstream?.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
