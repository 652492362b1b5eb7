/**
 * The one precedence rule for a command's connection (docs/operators.md, "Which cluster, which
 * config"): each setting from the first of flags, environment, config file, Temporal profile and
 * the endpoint file `toolgate dev` wrote.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConnection, resolveDataDir } from '../../../src/client/connection-settings.ts';

let directory: string;
let profileFile: string;
/** An environment that names nothing, with the profile file where Temporal looks for it. */
let bare: NodeJS.ProcessEnv;

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'toolgate-precedence-'));
  profileFile = join(directory, 'temporal.toml');
  await writeFile(
    profileFile,
    [
      '[profile.default]',
      'address = "profile.example:7233"',
      'namespace = "profile-ns"',
      'api_key = "profile-key"',
      '[profile.staging]',
      'address = "staging.example:7233"',
      '',
    ].join('\n'),
  );
  bare = { HOME: directory, XDG_CONFIG_HOME: join(directory, 'no-config-here') };
});

afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

const flags = { address: 'flag.example:7233', namespace: 'flag-ns', taskQueue: 'flag-queue' };
const environment = {
  TEMPORAL_ADDRESS: 'env.example:7233',
  TEMPORAL_NAMESPACE: 'env-ns',
  TOOLGATE_TASK_QUEUE: 'env-queue',
};
const config = {
  connection: { address: 'config.example:7233', namespace: 'config-ns', apiKey: 'config-key' },
  taskQueue: 'config-queue',
};
const endpointFile = { address: '127.0.0.1:7333', namespace: 'endpoint-ns', taskQueue: 'endpoint-queue' };

describe('which cluster a command talks to', () => {
  it('takes each setting from the first source that gives it: flags, environment, config, profile, endpoint file', () => {
    const profile = { TEMPORAL_CONFIG_FILE: profileFile };
    const every = { ...bare, ...environment, ...profile };
    const cases = [
      { inputs: { flags, env: every, config, endpointFile }, address: flags.address, from: 'flag' },
      {
        inputs: { env: every, config, endpointFile },
        address: environment.TEMPORAL_ADDRESS,
        from: 'environment',
      },
      {
        inputs: { env: { ...bare, ...profile }, config, endpointFile },
        address: config.connection.address,
        from: 'config file',
      },
      {
        inputs: { env: { ...bare, ...profile }, endpointFile },
        address: 'profile.example:7233',
        from: 'Temporal profile',
      },
      { inputs: { env: bare, endpointFile }, address: endpointFile.address, from: 'endpoint file' },
    ] as const;
    for (const { inputs, address, from } of cases) {
      const resolved = resolveConnection(inputs);
      expect(resolved.address, from).toBe(address);
      expect(resolved.sources.address, from).toBe(from);
      expect(resolved.connectionOptions['address'], from).toBe(address);
    }
    expect(resolveConnection({ env: bare }).address).toBeUndefined();
  });

  it('resolves namespace, API key and task queue by the same rule, field by field', () => {
    const fromEnvironment = resolveConnection({
      env: { ...bare, TEMPORAL_NAMESPACE: 'env-ns' },
      config,
      endpointFile,
    });
    expect(fromEnvironment.namespace).toBe('env-ns');
    // The address and the key come from the config, which the environment does not override here.
    expect(fromEnvironment.address).toBe('config.example:7233');
    expect(fromEnvironment.connectionOptions['apiKey']).toBe('config-key');
    expect(fromEnvironment.taskQueue).toBe('config-queue');
    expect(fromEnvironment.sources).toEqual({
      address: 'config file',
      namespace: 'environment',
      taskQueue: 'config file',
    });

    const queues = [
      resolveConnection({ flags, env: { ...bare, ...environment }, config, endpointFile }).taskQueue,
      resolveConnection({ env: { ...bare, ...environment }, config, endpointFile }).taskQueue,
      resolveConnection({ env: bare, config, endpointFile }).taskQueue,
      resolveConnection({ env: bare, endpointFile }).taskQueue,
      resolveConnection({ env: bare }).taskQueue,
    ];
    expect(queues).toEqual(['flag-queue', 'env-queue', 'config-queue', 'endpoint-queue', 'toolgate']);
    expect(resolveConnection({ env: bare }).namespace).toBe('default');
  });

  it('reads the named Temporal profile, and says what is wrong with a missing one', () => {
    const staging = resolveConnection({
      env: { ...bare, TEMPORAL_CONFIG_FILE: profileFile, TEMPORAL_PROFILE: 'staging' },
    });
    expect(staging.address).toBe('staging.example:7233');
    expect(() =>
      resolveConnection({ env: { ...bare, TEMPORAL_CONFIG_FILE: join(directory, 'none.toml') } }),
    ).toThrow(/TEMPORAL_CONFIG_FILE names .*none\.toml, which does not exist/);
    expect(() => resolveConnection({ env: { ...bare, TEMPORAL_PROFILE: 'prod' } })).toThrow(
      /TEMPORAL_PROFILE is prod, but there is no Temporal config file/,
    );
    expect(() =>
      resolveConnection({ env: { ...bare, TEMPORAL_CONFIG_FILE: profileFile, TEMPORAL_PROFILE: 'nope' } }),
    ).toThrow(/cannot be used: .*nope/);
  });

  it('gives a TLS setting of the config file to the connection, and the environment wins over it', () => {
    const tls = resolveConnection({
      env: bare,
      config: { connection: { address: 'a.example:7233', tls: true } },
    });
    expect(tls.connectionOptions['tls']).toBeTruthy();
    const plain = resolveConnection({
      env: { ...bare, TEMPORAL_TLS: 'false' },
      config: { connection: { address: 'a.example:7233', tls: true } },
    });
    expect(plain.connectionOptions['tls']).toBeFalsy();
  });
});

describe('which data directory', () => {
  it('takes --data-dir, then TOOLGATE_DATA_DIR, then the config, then .toolgate, from the working folder', () => {
    const cwd = '/work/project';
    expect(resolveDataDir('flag-dir', { TOOLGATE_DATA_DIR: '/env' }, '/config', cwd)).toBe(
      '/work/project/flag-dir',
    );
    expect(resolveDataDir(undefined, { TOOLGATE_DATA_DIR: '/env' }, '/config', cwd)).toBe('/env');
    expect(resolveDataDir(undefined, {}, '/config', cwd)).toBe('/config');
    expect(resolveDataDir(undefined, { TOOLGATE_DATA_DIR: '' }, undefined, cwd)).toBe(
      '/work/project/.toolgate',
    );
  });
});
