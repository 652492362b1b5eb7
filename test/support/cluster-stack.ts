/**
 * What docker-compose.yml describes, brought up as real processes on this machine for
 * `npm run test:cluster` (there is no Docker engine here):
 *
 * - PostgreSQL from Debian's package (15 here; compose pins the postgres:16 image);
 * - the Temporal server and its SQL tool, built from Go modules at the compose file's server version
 *   and cached like the CLI, with the server's own config template (`config/docker.yaml` of the same
 *   module, the one the image renders) filled from the compose file's environment;
 * - the schema and the namespace through `deploy/temporal/`'s scripts, unchanged;
 * - the workers, started by the tests with the compose file's environment (`workerEnvironment`).
 *
 * Only what cannot be the same outside containers changes: host names become 127.0.0.1, ports are
 * free ones, and mounted paths are the repository's files.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import {
  chown,
  cp,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rename,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { findFreePort } from '../../src/dev/index.ts';
import { stepTimer } from './step-timer.ts';
import { asList, environmentOf, get, parseYamlSubset, type YamlValue } from './yaml-subset.ts';

const run = promisify(execFile);
export const repositoryRoot = fileURLToPath(new URL('../..', import.meta.url));

/** The parsed compose file, and one service's environment with compose's `${…}` filled in. */
export async function composeFile(): Promise<{
  readonly document: YamlValue;
  service(name: string): YamlValue;
  environment(name: string, env?: NodeJS.ProcessEnv): Record<string, string>;
}> {
  const document = parseYamlSubset(await readFile(join(repositoryRoot, 'docker-compose.yml'), 'utf8'));
  const service = (name: string) => {
    const found = get(document, 'services', name);
    if (!found) throw new Error(`docker-compose.yml has no service ${name}`);
    return found;
  };
  return {
    document,
    service,
    environment(name, env = process.env) {
      const filled: Record<string, string> = {};
      for (const [key, value] of environmentOf(service(name))) filled[key] = interpolate(value ?? '', env);
      return filled;
    },
  };
}

/** Compose's interpolation: `${VAR}`, `${VAR:-default}`, `${VAR:?message}` and `$$`. */
export function interpolate(value: string, env: NodeJS.ProcessEnv): string {
  return value.replace(
    /\$\$|\$\{(\w+)(?:(:?[-?])([^}]*))?\}/g,
    (whole, name?: string, operator?: string, rest = '') => {
      if (whole === '$$') return '$';
      const set = env[name!];
      const usable = operator?.startsWith(':') ? Boolean(set) : set !== undefined;
      if (usable) return set!;
      if (operator?.endsWith('?')) throw new Error(`docker-compose.yml needs ${name}: ${rest}`);
      return operator ? rest : '';
    },
  );
}

export interface ServerBinaries {
  readonly version: string;
  /** Holds `temporal-server` and `temporal-sql-tool`. */
  readonly binDir: string;
  /** `--root` for the server: holds `config/docker.yaml`. */
  readonly root: string;
  /** `schema/postgresql/v12` of the same module. */
  readonly schemaRoot: string;
}

/**
 * The Temporal server and SQL tool at `version`, built once with `go install` into the per-user
 * cache (about 80 s on two cores with the module proxy), with the config template and schema of the
 * same module beside them.
 */
export async function serverBinaries(
  version: string,
  progress: (line: string) => void,
): Promise<ServerBinaries> {
  const cache = join(
    process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'),
    'toolgate',
    `temporal-server-v${version}`,
  );
  const binaries: ServerBinaries = {
    version,
    binDir: join(cache, 'bin'),
    root: cache,
    schemaRoot: join(cache, 'schema', 'postgresql', 'v12'),
  };
  const complete = await readFile(join(cache, 'complete'), 'utf8').catch(() => '');
  if (complete === version) return binaries;
  progress(
    `building the Temporal server ${version} and its SQL tool with go install (once; about a minute and a half)`,
  );
  const building = await mkdtemp(join(tmpdir(), 'toolgate-server-build-'));
  try {
    await run(
      'go',
      [
        'install',
        `go.temporal.io/server/cmd/server@v${version}`,
        `go.temporal.io/server/cmd/tools/sql@v${version}`,
      ],
      { env: { ...process.env, GOBIN: building }, maxBuffer: 64 * 1024 * 1024, timeout: 900_000 },
    ).catch((error: { stderr?: string }) => {
      throw new Error(
        `go install of the Temporal server ${version} failed (it needs Go and the module proxy):\n${error.stderr ?? error}`,
      );
    });
    const module = join(
      (await run('go', ['env', 'GOMODCACHE'])).stdout.trim(),
      `go.temporal.io/server@v${version}`,
    );
    await rm(cache, { recursive: true, force: true });
    await mkdir(binaries.binDir, { recursive: true });
    await rename(join(building, 'server'), join(binaries.binDir, 'temporal-server'));
    await rename(join(building, 'sql'), join(binaries.binDir, 'temporal-sql-tool'));
    await cp(join(module, 'config', 'docker.yaml'), join(cache, 'config', 'docker.yaml'));
    await cp(join(module, 'schema', 'postgresql'), join(cache, 'schema', 'postgresql'), { recursive: true });
    await writeFile(join(cache, 'complete'), version);
  } finally {
    await rm(building, { recursive: true, force: true });
  }
  return binaries;
}

/** A process this module started, stopped by its process group. */
export interface Started {
  readonly pid: number;
  running(): boolean;
  stop(signal?: NodeJS.Signals): Promise<void>;
  output(): string;
}

function startGroup(command: string, args: readonly string[], env: NodeJS.ProcessEnv): Started {
  const child: ChildProcess = spawn(command, args, {
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = `${output}${chunk.toString('utf8')}`.slice(-200_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    pid: child.pid!,
    output: () => output,
    running: () => child.exitCode === null && child.signalCode === null,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      try {
        process.kill(-child.pid!, signal);
      } catch {
        return;
      }
      const timer = setTimeout(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {}
      }, 30_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

async function until(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs: number,
  owner?: Started,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    if (owner && !owner.running())
      throw new Error(`${what}: the process exited:\n${owner.output().slice(-4_000)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(
    `${what} did not happen within ${timeoutMs / 1000} s${owner ? `:\n${owner.output().slice(-4_000)}` : ''}`,
  );
}

/** The newest PostgreSQL server of Debian's packages. */
async function postgresBin(): Promise<string> {
  const versions = await readdir('/usr/lib/postgresql').catch(() => [] as string[]);
  const newest = versions.filter((name) => /^\d+$/.test(name)).sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) {
    throw new Error(
      "No PostgreSQL server found under /usr/lib/postgresql. Install Debian's: apt-get install -y postgresql (as root).",
    );
  }
  return join('/usr/lib/postgresql', newest, 'bin');
}

export interface Postgres extends Started {
  readonly port: number;
  readonly version: string;
}

/**
 * A throwaway PostgreSQL cluster on 127.0.0.1 with password authentication, as the compose file's
 * `postgresql` service: the superuser is `user` with `password`. PostgreSQL refuses to run as
 * root, so under root it runs as the `postgres` user the Debian package creates.
 */
export async function startPostgres(workDir: string, user: string, password: string): Promise<Postgres> {
  const bin = await postgresBin();
  const root = process.getuid?.() === 0;
  const asOwner = async (path: string) => {
    if (!root) return;
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: group } = await run('id', ['-g', 'postgres']);
    await chown(path, Number(stdout.trim()), Number(group.trim()));
  };
  const pgDir = join(workDir, 'postgresql');
  const dataDir = join(pgDir, 'data');
  const socketDir = join(pgDir, 'socket');
  await mkdir(socketDir, { recursive: true });
  await asOwner(workDir);
  await asOwner(pgDir);
  await asOwner(socketDir);
  const passwordFile = join(pgDir, 'password');
  await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  await asOwner(passwordFile);
  const command = (tool: string, args: readonly string[]): [string, string[]] =>
    root ? ['runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]] : [join(bin, tool), [...args]];
  await run(
    ...command('initdb', [
      '-D',
      dataDir,
      '-U',
      user,
      `--pwfile=${passwordFile}`,
      '--auth=scram-sha-256',
      '--encoding=UTF8',
      '--no-locale',
    ]),
  );
  const port = await findFreePort(0, '127.0.0.1');
  const server = startGroup(
    ...command('postgres', [
      '-D',
      dataDir,
      '-p',
      String(port),
      '-k',
      socketDir,
      '-c',
      'listen_addresses=127.0.0.1',
    ]),
    process.env,
  );
  await until(
    'PostgreSQL accepting connections',
    async () => {
      await run('pg_isready', ['-h', '127.0.0.1', '-p', String(port), '-U', user, '-d', 'postgres']);
      return true;
    },
    60_000,
    server,
  );
  return { ...server, port, version: bin.split('/').at(-2)! };
}

export interface ClusterStack {
  readonly address: string;
  /** The server's Prometheus endpoint. */
  readonly metricsUrl: string;
  readonly namespace: string;
  readonly postgresVersion: string;
  readonly serverVersion: string;
  readonly workDir: string;
  /** The timings of the set-up, in ms. */
  readonly timings: Record<string, number>;
  stop(): Promise<void>;
}

/**
 * Brings up the stack: PostgreSQL, the schema (`deploy/temporal/setup-schema.sh`), the Temporal
 * server with the compose environment, and the namespace and search attributes
 * (`deploy/temporal/register-search-attributes.sh`). `temporalCli` is the `temporal` CLI the
 * registration script calls.
 */
export async function startClusterStack(
  temporalCli: string,
  progress: (line: string) => void,
): Promise<ClusterStack> {
  const { timings, timed } = stepTimer();
  const compose = await composeFile();
  const image = String(get(compose.service('temporal'), 'image'));
  const serverVersion = /^temporalio\/server:(\d+\.\d+\.\d+)$/.exec(image)?.[1];
  if (!serverVersion)
    throw new Error(`docker-compose.yml's temporal image is ${image}: expected temporalio/server:X.Y.Z`);
  const binaries = await timed('server binaries', () => serverBinaries(serverVersion, progress));

  const workDir = await mkdtemp(join(tmpdir(), 'toolgate-cluster-'));
  // The one secret compose insists on: made up here, as an operator's .env would hold it.
  const env = { ...process.env, POSTGRES_PASSWORD: `pw-${Math.random().toString(36).slice(2)}` };
  const parts: Started[] = [];
  const stop = async () => {
    for (const part of parts.reverse()) await part.stop('SIGTERM').catch(() => undefined);
    await rm(workDir, { recursive: true, force: true });
  };
  try {
    const database = compose.environment('postgresql', env);
    const postgres = await timed('postgresql', () =>
      startPostgres(workDir, database['POSTGRES_USER']!, database['POSTGRES_PASSWORD']!),
    );
    parts.push(postgres);

    // The `temporal` CLI and the SQL tool, on PATH for the scripts as in the admin-tools image.
    const toolsDir = join(workDir, 'bin');
    await mkdir(toolsDir);
    await symlink(temporalCli, join(toolsDir, 'temporal'));
    const path = [toolsDir, binaries.binDir, process.env['PATH'] ?? ''].join(':');

    const schema = compose.environment('temporal-schema-setup', env);
    await timed('schema', () =>
      run('bash', [join(repositoryRoot, 'deploy/temporal/setup-schema.sh')], {
        env: {
          ...env,
          ...schema,
          PATH: path,
          SQL_HOST: '127.0.0.1',
          SQL_PORT: String(postgres.port),
          SCHEMA_ROOT: binaries.schemaRoot,
        },
        maxBuffer: 16 * 1024 * 1024,
      }).catch((error: { stdout?: string; stderr?: string }) => {
        throw new Error(`setup-schema.sh failed:\n${error.stdout ?? ''}${error.stderr ?? ''}`);
      }),
    );

    const ports = await freePorts(11);
    const serverEnv = {
      ...env,
      ...compose.environment('temporal', env),
      POSTGRES_SEEDS: '127.0.0.1',
      DB_PORT: String(postgres.port),
      VISIBILITY_DB_PORT: String(postgres.port),
      // Mounted from ./deploy/temporal/dynamicconfig in compose.
      DYNAMIC_CONFIG_FILE_PATH: join(repositoryRoot, 'deploy/temporal/dynamicconfig/production.yaml'),
      BIND_ON_IP: '127.0.0.1',
      TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1',
      FRONTEND_GRPC_PORT: String(ports[0]),
      FRONTEND_HTTP_PORT: String(ports[1]),
      FRONTEND_MEMBERSHIP_PORT: String(ports[2]),
      HISTORY_GRPC_PORT: String(ports[3]),
      HISTORY_MEMBERSHIP_PORT: String(ports[4]),
      MATCHING_GRPC_PORT: String(ports[5]),
      MATCHING_MEMBERSHIP_PORT: String(ports[6]),
      WORKER_GRPC_PORT: String(ports[7]),
      WORKER_MEMBERSHIP_PORT: String(ports[8]),
      INTERNAL_FRONTEND_HTTP_PORT: String(ports[9]),
      // Not in compose (nothing scrapes the server there): the tests count requests with it.
      PROMETHEUS_ENDPOINT: `127.0.0.1:${ports[10]}`,
    };
    const address = `127.0.0.1:${ports[0]}`;
    const server = startGroup(
      join(binaries.binDir, 'temporal-server'),
      ['--root', binaries.root, '--config', 'config', '--env', 'docker', '--allow-no-auth', 'start'],
      serverEnv,
    );
    parts.push(server);
    await timed('server serving', () =>
      until(
        'the Temporal server serving',
        async () =>
          (await run(temporalCli, ['operator', 'cluster', 'health', '--address', address])).stdout.includes(
            'SERVING',
          ),
        180_000,
        server,
      ),
    );

    const namespaceSetup = compose.environment('temporal-create-namespace', env);
    await timed('namespace and search attributes', () =>
      run('bash', [join(repositoryRoot, 'deploy/temporal/register-search-attributes.sh')], {
        env: { ...env, ...namespaceSetup, PATH: path, TEMPORAL_ADDRESS: address },
      }).catch((error: { stdout?: string; stderr?: string }) => {
        throw new Error(`register-search-attributes.sh failed:\n${error.stdout ?? ''}${error.stderr ?? ''}`);
      }),
    );
    return {
      address,
      metricsUrl: `http://127.0.0.1:${ports[10]}/metrics`,
      namespace: namespaceSetup['TEMPORAL_NAMESPACE'] ?? 'default',
      postgresVersion: postgres.version,
      serverVersion,
      workDir,
      timings,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Free ports below 32768: the server stores its membership ports in a PostgreSQL smallint, so the
 * ephemeral range the system hands out (32768 and up here) is refused at start-up.
 */
async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) {
    const candidate = 20_000 + Math.floor(Math.random() * 12_000);
    if (!ports.has(candidate) && (await findFreePort(candidate, '127.0.0.1')) === candidate)
      ports.add(candidate);
  }
  return [...ports];
}

/**
 * A toolgate service of the compose file (`toolgate-worker`, `toolgate-inbox`) as a process here: its
 * command and environment as compose gives them, with the cluster's address, a data folder for its
 * volume, the repository's compiled config for the image's, and the key files for the mounted ones.
 * Servers bind 127.0.0.1: compose binds 0.0.0.0 inside a container and publishes on 127.0.0.1.
 */
export async function serviceProcess(
  name: 'toolgate-worker' | 'toolgate-inbox',
  stack: Pick<ClusterStack, 'address'>,
  where: { dataDir: string; publicKeyFile?: string },
): Promise<{ env: NodeJS.ProcessEnv; args: string[]; replicas: number; stopGraceMs: number }> {
  const compose = await composeFile();
  const service = compose.service(name);
  const env = compose.environment(name);
  const command = asList(get(service, 'command')).map(String);
  if (command[0] !== 'node' || command[1] !== 'bin/toolgate.js') {
    throw new Error(`${name}'s command is ${JSON.stringify(command)}: expected node bin/toolgate.js …`);
  }
  const args = [join(repositoryRoot, command[1]), ...command.slice(2)].map((arg, index, all) =>
    all[index - 1] === '--host' && arg === '0.0.0.0' ? '127.0.0.1' : arg,
  );
  const grace = /^(\d+)s$/.exec(String(get(service, 'stop_grace_period')))?.[1];
  return {
    env: {
      ...process.env,
      ...env,
      TEMPORAL_ADDRESS: stack.address,
      TOOLGATE_DATA_DIR: where.dataDir,
      TOOLGATE_CONFIG: join(repositoryRoot, env['TOOLGATE_CONFIG']!.replace(/^\/app\//, '')),
      ...(env['TOOLGATE_APPROVAL_PUBLIC_KEY_FILE'] && where.publicKeyFile
        ? { TOOLGATE_APPROVAL_PUBLIC_KEY_FILE: where.publicKeyFile }
        : {}),
      ...(env['TOOLGATE_METRICS_HOST'] ? { TOOLGATE_METRICS_HOST: '127.0.0.1' } : {}),
    },
    args,
    replicas: Number(get(service, 'deploy', 'replicas') ?? 1),
    stopGraceMs: Number(grace ?? 10) * 1000,
  };
}
