// Validates the deployment files without a Docker engine:
// - structural checks on docker-compose.yml, parsed by a small YAML-subset parser below (no YAML dependency):
//   ports bound to 127.0.0.1, pinned image tags, no literal secrets, a consistent dependency graph, the
//   worker's environment. Each check is also run against a deliberately broken copy, so it is shown to fail.
// - Dockerfile / .dockerignore / dynamic config line checks;
// - the two setup scripts, run by bash against stub `temporal-sql-tool` / `psql` / `temporal` binaries;
// - when a compose binary is installed (`docker-compose` v1, or the `docker compose` plugin), the real
//   `config` validation, positive and negative. Those tests are reported as skipped, not passed, without one;
//   set TOOLGATE_REQUIRE_COMPOSE=1 (as .ci/run does) to make a missing binary fail the file instead.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { exampleCatalog } from '../../examples/contracts.ts';
import { searchAttributeNames } from '../../src/contracts/search-attributes.ts';
import { devDynamicConfigValues } from '../../src/dev/dev-server.ts';
import { drainGraceMsFor } from '../../src/worker/drain-grace.ts';
import {
  asList,
  asMap,
  environmentOf,
  get,
  isMap,
  parseYamlSubset,
  YamlSubsetError,
  type YamlValue,
} from '../support/yaml-subset.ts';

const { PATH = '', TOOLGATE_REQUIRE_COMPOSE } = process.env;
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const COMPOSE_PATH = join(ROOT, 'docker-compose.yml');
const read = (relative: string): string => readFileSync(join(ROOT, relative), 'utf8');

// Compose interpolation syntax, as written in docker-compose.yml.
// biome-ignore lint/suspicious/noTemplateCurlyInString: compose interpolation, not a JS template
const PASSWORD_REF = '"${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD (see .env.example)}"';
// biome-ignore lint/suspicious/noTemplateCurlyInString: compose interpolation, not a JS template
const NAMESPACE_REF = '${TEMPORAL_NAMESPACE:-default}';

const REQUIRED_SERVICES = ['postgresql', 'temporal', 'temporal-ui', 'toolgate-worker', 'toolgate-inbox'];
/** The one service that may hold the approval private key: it signs the decisions it takes. */
const SIGNER = 'toolgate-inbox';
const SEARCH_ATTRIBUTES = [
  'ToolName',
  'ToolTier',
  'CallStatus',
  'CallEffect',
  'Tenant',
  'Principal',
  'ReasonCode',
];

/** The inbox holds the private key read-only, on a data volume no other service mounts. */
function lintSigner(services: Record<string, YamlValue>): string[] {
  const problems: string[] = [];
  const inbox = services[SIGNER];
  const mounts = asList(get(inbox, 'volumes'));
  const keyMount = mounts.find((v) => get(v, 'source') === './deploy/keys/approval-private.pem');
  if (!keyMount) problems.push(`${SIGNER}: the approval private key is not mounted`);
  else if (get(keyMount, 'read_only') !== 'true')
    problems.push(`${SIGNER}: the private key mount must be read-only`);
  const ownVolumes = mounts.flatMap((v) => (typeof v === 'string' ? [v.split(':')[0]] : []));
  for (const [name, service] of Object.entries(services)) {
    if (name === SIGNER) continue;
    for (const volume of asList(get(service, 'volumes'))) {
      const source = typeof volume === 'string' ? volume.split(':')[0] : undefined;
      if (source && ownVolumes.includes(source)) {
        problems.push(
          `${name}: mounts ${source}, the inbox's volume, which holds approver tokens and the key`,
        );
      }
    }
  }
  if (
    !asList(get(inbox, 'ports')).every((port) => typeof port === 'string' && port.startsWith('127.0.0.1:'))
  ) {
    problems.push(`${SIGNER}: publish on 127.0.0.1 only`);
  }
  return problems;
}

/** Compose `depends_on` as service -> condition, for both the list and the mapping form. */
function dependsOn(service: YamlValue | undefined): Map<string, string> {
  const deps = get(service, 'depends_on');
  const out = new Map<string, string>();
  if (Array.isArray(deps)) {
    for (const d of deps) if (typeof d === 'string') out.set(d, 'service_started');
  } else if (isMap(deps)) {
    for (const [name, spec] of Object.entries(deps)) {
      const condition = get(spec, 'condition');
      out.set(name, typeof condition === 'string' ? condition : 'service_started');
    }
  }
  return out;
}

/** A secret-looking variable must come from the environment as a required `${VAR:?message}` reference. */
const SECRET_NAME = /PASSWORD|PASSWD|PWD$|SECRET|TOKEN|PRIVATE_KEY|API_KEY/i;
const REQUIRED_REFERENCE = /^\$\{[A-Z_][A-Z0-9_]*:\?[^}]*\}$/;
const DEPENDENCY_CONDITIONS = ['service_started', 'service_healthy', 'service_completed_successfully'];

function lintService(name: string, service: YamlValue | undefined, doc: YamlValue): string[] {
  const problems: string[] = [];
  const services = asMap(get(doc, 'services'));
  const namedVolumes = new Set(Object.keys(asMap(get(doc, 'volumes'))));

  const image = get(service, 'image');
  if (image === undefined && get(service, 'build') === undefined)
    problems.push(`${name}: neither image nor build`);
  if (typeof image === 'string') {
    const tag = /^(?:[^/]+\/)*[^/:@]+(?::([^/@]+))?(?:@sha256:[0-9a-f]{64})?$/.exec(image);
    if (!tag) problems.push(`${name}: cannot read image reference ${image}`);
    else if (!tag[1] || tag[1] === 'latest') problems.push(`${name}: image ${image} is not pinned to a tag`);
    else if (tag[1].includes('$')) problems.push(`${name}: image tag of ${image} is interpolated`);
  }

  for (const port of asList(get(service, 'ports'))) {
    if (typeof port === 'string') {
      if (!port.startsWith('127.0.0.1:')) problems.push(`${name}: port ${port} is not bound to 127.0.0.1`);
    } else if (get(port, 'host_ip') !== '127.0.0.1') {
      problems.push(`${name}: long-syntax port is not bound to host_ip 127.0.0.1`);
    }
  }

  for (const [dep, condition] of dependsOn(service)) {
    if (!(dep in services)) problems.push(`${name}: depends_on unknown service ${dep}`);
    if (!DEPENDENCY_CONDITIONS.includes(condition)) problems.push(`${name}: unknown condition ${condition}`);
    if (condition === 'service_healthy' && get(services, dep, 'healthcheck') === undefined) {
      problems.push(`${name}: waits for ${dep} to be healthy, but ${dep} has no healthcheck`);
    }
  }

  for (const [key, val] of environmentOf(service)) {
    if (SECRET_NAME.test(key) && !(val !== null && REQUIRED_REFERENCE.test(val))) {
      problems.push(`${name}: ${key} must be a required \${VAR:?...} reference, not ${JSON.stringify(val)}`);
    }
  }

  for (const volume of asList(get(service, 'volumes'))) {
    const source = typeof volume === 'string' ? (volume.split(':')[0] ?? '') : get(volume, 'source');
    if (typeof source !== 'string') continue;
    if (/private/i.test(source) && name !== SIGNER)
      problems.push(`${name}: mounts something private: ${source}`);
    const isPath = /^[./~]/.test(source);
    if (!isPath && !namedVolumes.has(source)) {
      problems.push(`${name}: volume ${source} is not declared under top-level volumes`);
    }
    // Files this repository provides must exist; keys are provisioned at deploy time.
    if (isPath && !source.startsWith('./deploy/keys/') && !existsSync(join(ROOT, source))) {
      problems.push(`${name}: bind source ${source} does not exist`);
    }
  }
  return problems;
}

function lintCompose(doc: YamlValue): string[] {
  const services = asMap(get(doc, 'services'));
  const problems = Object.entries(services).flatMap(([name, service]) => lintService(name, service, doc));
  for (const required of REQUIRED_SERVICES) {
    if (!(required in services)) problems.push(`missing service ${required}`);
  }
  const check = (ok: boolean, problem: string) => {
    if (!ok) problems.push(problem);
  };

  // The Temporal pipeline: schema setup before the server, registration before the workers.
  const temporal = get(services, 'temporal');
  const schemaSetup = [...dependsOn(temporal)].find(([, c]) => c === 'service_completed_successfully')?.[0];
  check(
    schemaSetup !== undefined,
    'temporal: must wait for a one-shot schema setup to complete successfully',
  );
  if (schemaSetup !== undefined) {
    const setup = get(services, schemaSetup);
    check(
      dependsOn(setup).get('postgresql') === 'service_healthy',
      `${schemaSetup}: must wait for postgresql`,
    );
    check(
      String(get(setup, 'image')).startsWith('temporalio/admin-tools:'),
      `${schemaSetup}: not admin-tools`,
    );
  }
  check(String(get(temporal, 'image')).startsWith('temporalio/server:'), 'temporal: not temporalio/server');
  check(environmentOf(temporal).get('DB') === 'postgres12', 'temporal: DB must be postgres12');
  check(get(temporal, 'healthcheck') !== undefined, 'temporal: no healthcheck');
  check(asList(get(temporal, 'ports')).includes('127.0.0.1:7233:7233'), 'temporal: 7233 not published');

  const ui = get(services, 'temporal-ui');
  check(environmentOf(ui).get('TEMPORAL_ADDRESS') === 'temporal:7233', 'temporal-ui: TEMPORAL_ADDRESS');
  check(asList(get(ui, 'ports')).includes('127.0.0.1:8080:8080'), 'temporal-ui: 8080 not published');

  const postgres = get(services, 'postgresql');
  check(/^postgres:16(\.|-|$)/.test(String(get(postgres, 'image'))), 'postgresql: not postgres 16');
  check(
    JSON.stringify(get(postgres, 'healthcheck') ?? null).includes('pg_isready'),
    'postgresql: healthcheck must use pg_isready',
  );

  const worker = get(services, 'toolgate-worker');
  const workerEnv = environmentOf(worker);
  const expectEnv = (key: string, ok: (v: string | null | undefined) => boolean) =>
    check(ok(workerEnv.get(key)), `toolgate-worker: ${key} is ${JSON.stringify(workerEnv.get(key))}`);
  expectEnv('TEMPORAL_ADDRESS', (v) => v === 'temporal:7233');
  expectEnv('TEMPORAL_NAMESPACE', (v) => v === 'default' || v === NAMESPACE_REF);
  expectEnv('TOOLGATE_TASK_QUEUE', (v) => v === 'toolgate');
  expectEnv('TOOLGATE_DATA_DIR', (v) => v === '/data');
  expectEnv('TOOLGATE_APPROVAL_PUBLIC_KEY_FILE', (v) => typeof v === 'string' && v.startsWith('/'));
  check(![...workerEnv.keys()].some((k) => /PRIVATE/i.test(k)), 'toolgate-worker: private key env');
  check(get(worker, 'build') !== undefined, 'toolgate-worker: must be built from the Dockerfile');
  check(get(worker, 'container_name') === undefined, 'toolgate-worker: container_name prevents replicas');
  check(get(worker, 'ports') === undefined, 'toolgate-worker: published ports prevent replicas');
  check(Number(get(worker, 'deploy', 'replicas')) >= 2, 'toolgate-worker: deploy.replicas < 2');
  const restart = get(worker, 'restart');
  check(typeof restart === 'string' && restart !== 'no', 'toolgate-worker: needs a restart policy');
  const keyFile = workerEnv.get('TOOLGATE_APPROVAL_PUBLIC_KEY_FILE');
  const keyMount = asList(get(worker, 'volumes')).find((v) => get(v, 'target') === keyFile);
  check(keyMount !== undefined, 'toolgate-worker: approval public key is not mounted at its env path');
  if (keyMount !== undefined) {
    check(get(keyMount, 'read_only') === 'true', 'toolgate-worker: approval key mount must be read-only');
    check(
      get(keyMount, 'source') === './deploy/keys/approval-public.pem',
      `toolgate-worker: approval key source is ${String(get(keyMount, 'source'))}`,
    );
  }
  check(
    asList(get(worker, 'volumes')).some((v) => typeof v === 'string' && v.endsWith(':/data')),
    'toolgate-worker: no volume at /data',
  );
  problems.push(...lintSigner(services));
  return problems;
}

const composeSource = readFileSync(COMPOSE_PATH, 'utf8');

/** The compose source with `from` replaced by `to`; fails if `from` is absent, so a mutation cannot be a no-op. */
function mutate(from: string, to: string): string {
  if (!composeSource.includes(from))
    throw new Error(`mutation target not found in docker-compose.yml: ${from}`);
  return composeSource.replace(from, to);
}

describe('YAML subset parser', () => {
  it('parses the constructs the compose file uses', () => {
    const doc = parseYamlSubset(
      [
        'a:',
        '  b: "x: #1"   # comment',
        "  c: 'it''s'",
        '  d: [CMD-SHELL, "pg_isready -U \\"$${U}\\""]',
        '  e:',
        '    - plain:value',
        '    - type: bind',
        '      read_only: true',
        '  f:',
        '  - same-indent item',
        '  g: {}',
      ].join('\n'),
    );
    expect(doc).toEqual({
      a: {
        b: 'x: #1',
        c: "it's",
        d: ['CMD-SHELL', 'pg_isready -U "$${U}"'],
        e: ['plain:value', { type: 'bind', read_only: 'true' }],
        f: ['same-indent item'],
        g: {},
      },
    });
  });

  it.each([
    ['tabs', 'a:\n\tb: 1'],
    ['anchors', 'a: &x 1'],
    ['aliases', 'a: *x'],
    ['block scalars', 'a: |\n  text'],
    ['flow mappings', 'a: {b: 1}'],
    ['duplicate keys', 'a: 1\na: 2'],
    ['bad indentation', 'a:\n    b: 1\n  c: 2'],
    ['unterminated quotes', 'a: "open'],
  ])('rejects %s', (_what, source) => {
    expect(() => parseYamlSubset(source)).toThrow(YamlSubsetError);
  });
});

describe('docker-compose.yml structure (always runs)', () => {
  const doc = parseYamlSubset(composeSource);

  it('passes every structural check', () => {
    expect(lintCompose(doc)).toEqual([]);
  });

  it('declares the whole stack', () => {
    expect(Object.keys(asMap(get(doc, 'services'))).sort()).toEqual(
      [
        'postgresql',
        'temporal',
        'temporal-create-namespace',
        'temporal-schema-setup',
        'temporal-ui',
        'toolgate-worker',
        'toolgate-inbox',
      ].sort(),
    );
  });

  it('pins Temporal server and admin-tools to the same server version', () => {
    const server = String(get(doc, 'services', 'temporal', 'image')).split(':')[1] ?? '';
    for (const name of ['temporal-schema-setup', 'temporal-create-namespace']) {
      const tag = String(get(doc, 'services', name, 'image')).split(':')[1] ?? '';
      expect(tag.startsWith(`${server}-`) || tag === server, `${name}: ${tag} vs server ${server}`).toBe(
        true,
      );
    }
  });

  it("gives the worker a stop grace longer than its drain grace for the examples' longest tool", () => {
    const grace = String(get(doc, 'services', 'toolgate-worker', 'stop_grace_period'));
    const seconds = Number(/^(\d+)s$/.exec(grace)?.[1]);
    // The drain, then a few seconds to close connections and exit.
    expect(seconds * 1000).toBeGreaterThanOrEqual(drainGraceMsFor(exampleCatalog) + 5_000);
  });

  it('mounts the dynamic config that DYNAMIC_CONFIG_FILE_PATH names', () => {
    const temporal = get(doc, 'services', 'temporal');
    const path = environmentOf(temporal).get('DYNAMIC_CONFIG_FILE_PATH') ?? '';
    const mount = asList(get(temporal, 'volumes')).find((v) => {
      const target = get(v, 'target');
      return typeof target === 'string' && path.startsWith(`${target}/`);
    });
    expect(mount, 'no mount contains the dynamic config path').toBeDefined();
    const relative = path.slice(String(get(mount, 'target')).length + 1);
    expect(existsSync(join(ROOT, String(get(mount, 'source')), relative))).toBe(true);
  });

  it.each([
    [
      'a port open on all interfaces',
      mutate('"127.0.0.1:8080:8080"', '"8080:8080"'),
      /not bound to 127\.0\.0\.1/,
    ],
    ['an unpinned image', mutate('temporalio/ui:2.34.0', 'temporalio/ui'), /not pinned/],
    ['a :latest image', mutate('postgres:16.10', 'postgres:latest'), /not pinned/],
    [
      'depends_on an unknown service',
      mutate(
        '      temporal-create-namespace:\n        condition: service_completed_successfully',
        '      temporal-register:\n        condition: service_completed_successfully',
      ),
      /depends_on unknown service temporal-register/,
    ],
    ['a hard-coded password', mutate(PASSWORD_REF, 'hunter2'), /POSTGRES_PASSWORD must be a required/],
    [
      'a password with a default',
      mutate(PASSWORD_REF, `"\${POSTGRES_PASSWORD:-temporal}"`),
      /must be a required/,
    ],
    [
      'a worker without TEMPORAL_ADDRESS',
      mutate(
        `      TEMPORAL_ADDRESS: temporal:7233\n      TEMPORAL_NAMESPACE: "${NAMESPACE_REF}"\n      TOOLGATE_TASK_QUEUE`,
        `      TEMPORAL_NAMESPACE: "${NAMESPACE_REF}"\n      TOOLGATE_TASK_QUEUE`,
      ),
      /toolgate-worker: TEMPORAL_ADDRESS/,
    ],
    ['a single worker', mutate('      replicas: 2', '      replicas: 1'), /replicas < 2/],
    [
      'a worker on the inbox volume',
      mutate('      - toolgate-data:/data', '      - toolgate-inbox-data:/data'),
      /toolgate-worker: mounts toolgate-inbox-data, the inbox's volume/,
    ],
    [
      'a writable private key mount',
      mutate(
        '        target: /data/keys/approval-private.pem\n        read_only: true',
        '        target: /data/keys/approval-private.pem\n        read_only: false',
      ),
      /private key mount must be read-only/,
    ],
    [
      'a writable key mount',
      mutate(
        '        target: /run/toolgate/approval-public.pem\n        read_only: true',
        '        target: /run/toolgate/approval-public.pem\n        read_only: false',
      ),
      /read-only/,
    ],
  ])('flags %s', (_what, source, expected) => {
    const problems = lintCompose(parseYamlSubset(source));
    expect(problems.join('\n')).toMatch(expected);
  });

  it('flags a missing required service', () => {
    const source = composeSource.replace(/^ {2}temporal-ui:$/m, '  temporal-web:');
    expect(source).not.toBe(composeSource);
    expect(lintCompose(parseYamlSubset(source))).toContain('missing service temporal-ui');
  });
});

describe('Dockerfile and .dockerignore', () => {
  const dockerfile = read('Dockerfile');
  const instructions = dockerfile
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.trimStart().startsWith('#'))
    .join('\n')
    .replace(/\\\n\s*/g, ' ')
    .split('\n');

  it('is multi-stage on a pinned node 24 bookworm-slim image', () => {
    const froms = instructions.filter((l) => /^FROM\s/i.test(l));
    expect(froms.length).toBeGreaterThanOrEqual(3);
    for (const from of froms) {
      const image = from.split(/\s+/)[1] ?? '';
      expect(image).toMatch(/^node:24\.\d+\.\d+-bookworm-slim$/);
    }
  });

  it('compiles the sources in a build stage and installs production dependencies from the lockfile', () => {
    const stages = instructions
      .join('\n')
      .split(/^FROM\s/m)
      .slice(1);
    const stage = (name: string) =>
      stages.find((text) => new RegExp(`^\\S+\\s+AS\\s+${name}\\b`).test(text)) ?? '';
    const build = stage('build').split('\n');
    const index = (lines: readonly string[], re: RegExp) => lines.findIndex((l) => re.test(l));
    // The build stage installs everything from the lock, copies the sources, then compiles them.
    const install = index(build, /^RUN\s.*npm ci --ignore-scripts/);
    expect(index(build, /^COPY\s+package\.json\s+package-lock\.json\s/)).toBeLessThan(install);
    for (const dir of ['src', 'workflows', 'activities', 'examples'])
      expect(index(build, new RegExp(`^COPY\\s+${dir}\\s`))).toBeGreaterThan(install);
    expect(index(build, /^RUN npm run build$/)).toBeGreaterThan(index(build, /^COPY\s+examples\s/));
    // The dependencies stage installs production dependencies only, from the lock, with no scripts.
    expect(stage('deps')).toMatch(/^RUN\s.*npm ci --omit=dev --ignore-scripts/m);
    // The runtime gets the compiled JS and no sources.
    const runtime = stage('runtime').split('\n');
    expect(runtime).toContain('COPY --from=build /app/dist ./dist');
    expect(runtime.filter((l) => /^COPY\s+(src|workflows|activities|examples)\s/.test(l))).toEqual([]);
  });

  it('runs as the non-root node user with the worker command and no secrets', () => {
    const lastFrom = instructions.map((l) => /^FROM\s/i.test(l)).lastIndexOf(true);
    const users = instructions.slice(lastFrom).filter((l) => /^USER\s/.test(l));
    expect(users.at(-1)).toBe('USER node');
    // node itself, so signals reach the worker without a wrapper relaying them; the compiled CLI
    // needs no loader, so tsx is a development dependency only, and bin/ must be in the image.
    expect(instructions.at(-1)).toBe('CMD ["node", "bin/toolgate.js", "worker"]');
    expect(instructions).toContain('COPY bin ./bin');
    const manifest = JSON.parse(read('package.json')) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    expect(Object.keys(manifest.dependencies)).not.toContain('tsx');
    expect(Object.keys(manifest.devDependencies)).toContain('tsx');
    for (const line of instructions.filter((l) => /^(ENV|ARG)\s/.test(l))) {
      expect(line).not.toMatch(SECRET_NAME);
    }
  });

  it('keeps local state and secrets out of the build context', () => {
    const entries = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim());
    for (const entry of [
      'node_modules',
      '.toolgate',
      '.git',
      'test-results',
      'bench/results',
      '.env',
      'deploy/keys',
    ]) {
      expect(entries).toContain(entry);
    }
  });
});

describe('deploy/ configuration', () => {
  it('dynamic config is a map of keys to lists of { value } entries', () => {
    const doc = asMap(parseYamlSubset(read('deploy/temporal/dynamicconfig/production.yaml')));
    expect(Object.keys(doc).length).toBeGreaterThan(0);
    for (const [key, entries] of Object.entries(doc)) {
      expect(key).toMatch(/^[a-z]+(\.[A-Za-z]+)+$/);
      expect(Array.isArray(entries), key).toBe(true);
      for (const entry of asList(entries)) expect(Object.keys(asMap(entry))).toContain('value');
    }
  });

  it("production dynamic config carries the dev server's tuning, except the one-shard transfer-queue setting", () => {
    const doc = asMap(parseYamlSubset(read('deploy/temporal/dynamicconfig/production.yaml')));
    const oneShardOnly = 'history.transferProcessorMaxPollRPS';
    expect(doc).not.toHaveProperty(oneShardOnly);
    for (const setting of devDynamicConfigValues) {
      const [key, value] = setting.split('=') as [string, string];
      if (key === oneShardOnly) continue;
      const entries = asList(doc[key]).map((entry) => String(asMap(entry)['value']));
      expect(entries, key).toEqual([value]);
    }
  });

  it('.env.example names POSTGRES_PASSWORD without a value', () => {
    expect(read('.env.example')).toMatch(/^POSTGRES_PASSWORD=$/m);
  });
});

// ---------------------------------------------------------------------------------------------------------
// The setup scripts, run for real by bash against stub binaries that log their arguments.
// ---------------------------------------------------------------------------------------------------------
const scratch = mkdtempSync(join(tmpdir(), 'toolgate-compose-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function stubDir(name: string, stubs: Record<string, string>): { bin: string; log: string } {
  const dir = join(scratch, name);
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  const log = join(dir, 'calls.log');
  writeFileSync(log, '');
  for (const [command, body] of Object.entries(stubs)) {
    const file = join(bin, command);
    writeFileSync(file, `#!/usr/bin/env bash\necho "${command} $*" >> "${log}"\n${body}\n`);
    chmodSync(file, 0o755);
  }
  return { bin, log };
}

function runScript(script: string, bin: string, env: Record<string, string>) {
  return spawnSync('bash', [join(ROOT, 'deploy/temporal', script)], {
    encoding: 'utf8',
    env: { PATH: `${bin}:${PATH}`, WAIT_ATTEMPTS: '2', WAIT_INTERVAL: '0', ...env },
    timeout: 20_000,
  });
}

const calls = (log: string): string[] => readFileSync(log, 'utf8').trim().split('\n').filter(Boolean);

describe('deploy/temporal/setup-schema.sh', () => {
  const schemaRoot = join(scratch, 'schema', 'postgresql', 'v12');
  for (const sub of ['temporal/versioned', 'visibility/versioned'])
    mkdirSync(join(schemaRoot, sub), { recursive: true });
  const env = {
    SQL_HOST: 'postgresql',
    SQL_USER: 'temporal',
    SQL_PASSWORD: 'dummy',
    SCHEMA_ROOT: schemaRoot,
  };

  it('passes bash -n', () => {
    expect(spawnSync('bash', ['-n', join(ROOT, 'deploy/temporal/setup-schema.sh')]).status).toBe(0);
  });

  it('creates missing databases and migrates both, with the password only in the environment', () => {
    // `temporal` already exists (the postgres image creates POSTGRES_USER's database); visibility does not.
    const { bin, log } = stubDir('schema-fresh', {
      pg_isready: 'exit 0',
      psql: `[[ "$*" == *"'temporal'"* ]] && echo 1; [[ "$PGPASSWORD" == dummy ]] || exit 9; exit 0`,
      'temporal-sql-tool': '[[ "$SQL_PASSWORD" == dummy && "$SQL_PLUGIN" == postgres12 ]] || exit 9; exit 0',
    });
    const result = runScript('setup-schema.sh', bin, env);
    expect(result.status, result.stderr + result.stdout).toBe(0);
    const tool = calls(log).filter((c) => c.startsWith('temporal-sql-tool'));
    expect(tool).toEqual([
      'temporal-sql-tool --db temporal setup-schema -v 0.0',
      `temporal-sql-tool --db temporal update-schema -d ${schemaRoot}/temporal/versioned`,
      'temporal-sql-tool --db temporal_visibility create-database',
      'temporal-sql-tool --db temporal_visibility setup-schema -v 0.0',
      `temporal-sql-tool --db temporal_visibility update-schema -d ${schemaRoot}/visibility/versioned`,
    ]);
    expect(calls(log).join('\n')).not.toContain('dummy');
  });

  it('fails when a migration fails, so the server does not start', () => {
    const { bin } = stubDir('schema-fail', {
      pg_isready: 'exit 0',
      psql: 'echo 1',
      'temporal-sql-tool': '[[ "$*" == *update-schema* ]] && exit 1; exit 0',
    });
    expect(runScript('setup-schema.sh', bin, env).status).not.toBe(0);
  });

  it('fails when PostgreSQL never becomes ready, and when it cannot be queried', () => {
    const down = stubDir('schema-down', {
      pg_isready: 'exit 2',
      psql: 'exit 0',
      'temporal-sql-tool': 'exit 0',
    });
    expect(runScript('setup-schema.sh', down.bin, env).status).not.toBe(0);
    const broken = stubDir('schema-psql', {
      pg_isready: 'exit 0',
      psql: 'exit 2',
      'temporal-sql-tool': 'exit 0',
    });
    expect(runScript('setup-schema.sh', broken.bin, env).status).not.toBe(0);
    expect(calls(broken.log).some((c) => c.includes('create-database'))).toBe(false);
  });
});

describe('deploy/temporal/register-search-attributes.sh', () => {
  const script = read('deploy/temporal/register-search-attributes.sh');
  const env = { TEMPORAL_ADDRESS: 'temporal:7233', TEMPORAL_NAMESPACE: 'default' };
  /** A `temporal` stub whose `search-attribute list` prints the given table. */
  const temporalStub = (list: string, namespaceExists: boolean) => ({
    temporal: [
      'case "$*" in',
      '  *"cluster health"*) echo SERVING ;;',
      `  *"namespace describe"*) exit ${namespaceExists ? 0 : 1} ;;`,
      `  *"search-attribute list"*) printf ${JSON.stringify(`${list}\n`)} ;;`,
      'esac',
      'exit 0',
    ].join('\n'),
  });

  it('declares exactly the toolgate search attributes, all Keyword', () => {
    const declared = /^SEARCH_ATTRIBUTES=\(([^)]*)\)$/m.exec(script)?.[1]?.trim().split(/\s+/);
    expect(declared).toEqual(SEARCH_ATTRIBUTES);
    // ...and the same set the workflows upsert (src/contracts/search-attributes.ts).
    expect([...searchAttributeNames].sort()).toEqual([...SEARCH_ATTRIBUTES].sort());
    expect(script).toContain('--type Keyword');
    expect(
      spawnSync('bash', ['-n', join(ROOT, 'deploy/temporal/register-search-attributes.sh')]).status,
    ).toBe(0);
  });

  it('creates the namespace and registers only the attributes that are missing', () => {
    const { bin, log } = stubDir(
      'sa-fresh',
      temporalStub('Name Type\nToolName Keyword\nWorkflowId Keyword', false),
    );
    const result = runScript('register-search-attributes.sh', bin, env);
    expect(result.status, result.stderr + result.stdout).toBe(0);
    const logged = calls(log);
    expect(logged).toContain(
      'temporal --address temporal:7233 operator namespace create --namespace default --retention 168h --description toolgate tool calls',
    );
    const created = logged.filter((c) => c.includes('search-attribute create'));
    expect(created).toEqual(
      SEARCH_ATTRIBUTES.filter((n) => n !== 'ToolName').map(
        (n) =>
          `temporal --address temporal:7233 operator search-attribute create --namespace default --name ${n} --type Keyword`,
      ),
    );
  });

  it('is a no-op when everything exists, and fails on an attribute of the wrong type', () => {
    const all = SEARCH_ATTRIBUTES.map((n) => `${n} Keyword`).join('\n');
    const done = stubDir('sa-done', temporalStub(all, true));
    expect(runScript('register-search-attributes.sh', done.bin, env).status).toBe(0);
    expect(calls(done.log).some((c) => c.includes(' create '))).toBe(false);

    const wrong = stubDir('sa-wrong', temporalStub(all.replace('Tenant Keyword', 'Tenant Text'), true));
    const result = runScript('register-search-attributes.sh', wrong.bin, env);
    expect(result.status).not.toBe(0);
    expect(result.stdout + result.stderr).toContain('Tenant exists with another type');
  });
});

// ---------------------------------------------------------------------------------------------------------
// The real compose implementation, when one is installed. `config` needs no Docker engine.
// ---------------------------------------------------------------------------------------------------------
function findCompose(): string[] | null {
  for (const candidate of [['docker-compose'], ['docker', 'compose']]) {
    const [cmd, ...args] = candidate as [string, ...string[]];
    const probe = spawnSync(cmd, [...args, 'version'], { encoding: 'utf8', timeout: 30_000 });
    if (probe.status === 0) return candidate;
  }
  return null;
}

const compose = findCompose();
const hasCompose = compose !== null;
const emptyEnvFile = join(scratch, 'empty.env');
writeFileSync(emptyEnvFile, '');

/** Runs compose against `file` with the repository as project directory, ignoring any local .env. */
function runCompose(file: string, args: string[], env: Record<string, string>) {
  const [cmd, ...base] = compose as [string, ...string[]];
  return spawnSync(
    cmd,
    [...base, '--project-directory', ROOT, '--env-file', emptyEnvFile, '-f', file, ...args],
    {
      encoding: 'utf8',
      // Only what is listed here: no stray POSTGRES_PASSWORD from the calling shell.
      env: { PATH, HOME: scratch, ...env },
      timeout: 60_000,
    },
  );
}

const DUMMY_ENV = { POSTGRES_PASSWORD: 'dummy-not-a-secret' };

// Where a compose binary is required (CI installs one), its absence fails this whole file at once,
// rather than showing up as skipped checks.
if (TOOLGATE_REQUIRE_COMPOSE === '1' && !hasCompose) {
  throw new Error(
    'TOOLGATE_REQUIRE_COMPOSE=1 but no compose binary was found: install docker-compose (apt-get install docker-compose) or the compose plugin.',
  );
}

describe('compose binary validation', () => {
  it.runIf(hasCompose)('`config --quiet` accepts docker-compose.yml', { timeout: 60_000 }, () => {
    const result = runCompose(COMPOSE_PATH, ['config', '--quiet'], DUMMY_ENV);
    expect(result.status, result.stderr).toBe(0);
  });

  it.runIf(hasCompose)('lists the same services as the structural parser', { timeout: 60_000 }, () => {
    const result = runCompose(COMPOSE_PATH, ['config', '--services'], DUMMY_ENV);
    expect(result.status, result.stderr).toBe(0);
    const fromCompose = result.stdout.trim().split('\n').sort();
    const fromParser = Object.keys(asMap(get(parseYamlSubset(composeSource), 'services'))).sort();
    expect(fromCompose).toEqual(fromParser);
  });

  it.runIf(hasCompose)('refuses to render without POSTGRES_PASSWORD', { timeout: 60_000 }, () => {
    const result = runCompose(COMPOSE_PATH, ['config', '--quiet'], {});
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('set POSTGRES_PASSWORD');
  });

  it.runIf(hasCompose)(
    'rejects a copy that depends on an unknown service (control copy passes)',
    { timeout: 60_000 },
    () => {
      const dir = mkdtempSync(join(scratch, 'broken-'));
      const control = join(dir, 'control.yml');
      const broken = join(dir, 'broken.yml');
      writeFileSync(control, composeSource);
      writeFileSync(
        broken,
        mutate(
          '      temporal-create-namespace:\n        condition: service_completed_successfully',
          '      temporal-register:\n        condition: service_completed_successfully',
        ),
      );
      const ok = runCompose(control, ['config', '--quiet'], DUMMY_ENV);
      expect(ok.status, ok.stderr).toBe(0);
      const bad = runCompose(broken, ['config', '--quiet'], DUMMY_ENV);
      expect(bad.status).not.toBe(0);
      expect(bad.stderr).toMatch(/temporal-register/);
    },
  );
});
