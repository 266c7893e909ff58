/**
 * A real `redis-server` for the shared-state tests: started on a free loopback port with
 * persistence off (and a password when asked), stopped — or killed, paused and resumed, to
 * model faults — by the test. `.ci/run` installs the server when the machine has none.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createServer, Socket } from 'node:net';

export interface RedisServer {
  readonly port: number;
  /** `redis://127.0.0.1:<port>` (with the password as `:<password>@` when one is set). */
  readonly url: string;
  readonly process: ChildProcess;
  /** Sends `signal` (SIGKILL: a crash; SIGSTOP / SIGCONT: a stall and its end). */
  signal(signal: NodeJS.Signals): void;
  /** Stops the server (SIGTERM, then SIGKILL after 2 s) and waits for it to exit. Idempotent. */
  stop(): Promise<void>;
}

/** Whether `redis-server` can be run here. */
export function hasRedisServer(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** A free TCP port on 127.0.0.1 (free when asked; the server binds it right after). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  server.close();
  await once(server, 'close');
  return port;
}

/** Sends `PING` (with AUTH first when given) and resolves whether the server answered. */
async function pings(port: number, password: string | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    let answer = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('error', () => done(false));
    socket.on('data', (chunk) => {
      answer += chunk.toString('latin1');
      if (answer.includes('+PONG')) done(true);
      else if (answer.includes('-')) done(false);
    });
    socket.connect(port, '127.0.0.1', () => {
      // RESP arrays: a password may hold spaces.
      const auth =
        password === undefined
          ? ''
          : `*2\r\n$4\r\nAUTH\r\n$${Buffer.byteLength(password)}\r\n${password}\r\n`;
      socket.write(`${auth}*1\r\n$4\r\nPING\r\n`);
    });
  });
}

/**
 * Starts `redis-server` on a free loopback port, without persistence, and waits until it
 * answers `PING` (at most 10 s; every loop here is bounded).
 *
 * @throws when the server does not come up.
 */
export async function startRedis(
  options: { readonly password?: string; readonly port?: number } = {},
): Promise<RedisServer> {
  const port = options.port ?? (await freePort());
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
  if (options.password !== undefined) args.push('--requirepass', options.password);
  const child = spawn('redis-server', args, { stdio: 'ignore' });
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  for (let i = 0; i < 200 && !exited; i++) {
    if (await pings(port, options.password)) {
      const auth =
        options.password === undefined ? '' : `:${encodeURIComponent(options.password)}@`;
      return {
        port,
        url: `redis://${auth}127.0.0.1:${port}`,
        process: child,
        signal: (signal) => {
          if (!exited) child.kill(signal);
        },
        stop: async () => {
          if (exited) return;
          child.kill('SIGCONT'); // a paused server cannot act on SIGTERM
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), 2_000);
          if (!exited) await once(child, 'exit');
          clearTimeout(timer);
        },
      };
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`redis-server did not answer on port ${port}`);
}
