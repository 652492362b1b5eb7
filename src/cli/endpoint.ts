import { createPrivateKey, type KeyObject } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { createApprovalSigner } from '../client/approval-signer.ts';
import { resolveConnection, resolveDataDir, type SettingSource } from '../client/connection-settings.ts';
import { ToolgateOperations } from '../client/operations.ts';
import { ToolgateClient } from '../client/toolgate-client.ts';
import type { LoadedConfig } from '../config/load-config.ts';
import { ConfigError, EndpointUnavailableError } from '../contracts/errors.ts';

export { EndpointUnavailableError };

/** What `toolgate dev` writes to `<dataDir>/endpoint.json`, so other commands find the server. */
export interface EndpointFile {
  readonly address: string;
  readonly namespace: string;
  readonly taskQueue: string;
  readonly uiUrl?: string | null;
  readonly pid: number;
  readonly startedAt: string;
}

/** Flags every client command accepts; each overrides the environment, the config and the endpoint file. */
export interface ConnectionFlags {
  readonly address?: string;
  readonly namespace?: string;
  readonly taskQueue?: string;
  readonly dataDir?: string;
  /** `--gate-protocol` of the commands that start runs, as typed ("2" or "3"). */
  readonly gateProtocol?: string;
  /** `--config <file>`. */
  readonly config?: string;
  /** `--example`: the bundled examples' config. */
  readonly example?: boolean;
}

export interface ResolvedEndpoint {
  readonly address: string;
  readonly namespace: string;
  readonly taskQueue: string;
  readonly dataDir: string;
  /** Where the address came from, for error messages. */
  readonly source: SettingSource;
  readonly connectionOptions: Record<string, unknown>;
}

export function endpointFilePath(dataDir: string): string {
  return join(dataDir, 'endpoint.json');
}

export async function writeEndpointFile(dataDir: string, endpoint: EndpointFile): Promise<void> {
  await mkdir(dataDir, { recursive: true });
  await writeFile(endpointFilePath(dataDir), `${JSON.stringify(endpoint, null, 2)}\n`);
}

export async function removeEndpointFile(dataDir: string): Promise<void> {
  await rm(endpointFilePath(dataDir), { force: true });
}

/** What a running `toolgate dev` wrote into the data directory, if anything. */
export async function readEndpointFile(dataDir: string): Promise<EndpointFile | undefined> {
  try {
    return JSON.parse(await readFile(endpointFilePath(dataDir), 'utf8')) as EndpointFile;
  } catch {
    return undefined;
  }
}

/**
 * Finds the cluster by the one precedence rule (`resolveConnection`): flags, environment, the
 * config file, a Temporal profile, then the endpoint file a running `toolgate dev` wrote.
 */
export async function resolveEndpoint(
  flags: ConnectionFlags,
  config: Pick<LoadedConfig, 'connection' | 'taskQueue' | 'dataDir'> | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ResolvedEndpoint> {
  const dataDir = resolveDataDir(flags.dataDir, env, config?.dataDir);
  const file = await readEndpointFile(dataDir);
  const connection = resolveConnection({
    flags,
    env,
    ...(config ? { config } : {}),
    ...(file ? { endpointFile: file } : {}),
  });
  if (!connection.address) {
    throw new EndpointUnavailableError(
      `No Temporal cluster named, and no toolgate server found: ${endpointFilePath(dataDir)} does not exist. Start one with \`toolgate dev\`, or name a cluster with --address, TEMPORAL_ADDRESS or the config's connection.address.`,
    );
  }
  return {
    address: connection.address,
    namespace: connection.namespace,
    taskQueue: connection.taskQueue,
    dataDir,
    source: connection.sources.address ?? 'default',
    connectionOptions: connection.connectionOptions,
  };
}

/**
 * Reads the data directory's approval private key for signing. A file that is not an Ed25519
 * private key in PEM (truncated, edited, replaced) is named, with what to do, instead of OpenSSL's
 * decoder error.
 */
export async function readApprovalPrivateKey(file: string): Promise<KeyObject> {
  const remedy =
    'Restore it from a backup. If it is lost, stop `toolgate dev`, remove approval-private.pem and approval-public.pem from that folder, and start `toolgate dev` again: it creates a new pair, which its workers then trust (decisions signed with the old key no longer count).';
  let key: KeyObject;
  try {
    key = createPrivateKey(await readFile(file));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const detail = error instanceof Error ? error.message : String(error);
    throw new ConfigError(
      code === 'EACCES' || code === 'EPERM' || code === 'EISDIR'
        ? `The approval key ${file} cannot be read (${detail}). Run as the user that owns the data directory.`
        : `The approval key ${file} is not a PEM private key (${detail}): it is damaged. ${remedy}`,
    );
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new ConfigError(
      `The approval key ${file} is a ${key.asymmetricKeyType ?? 'unknown'} key, not an Ed25519 one. ${remedy}`,
    );
  }
  return key;
}

export interface CliSession {
  readonly config: LoadedConfig;
  readonly endpoint: ResolvedEndpoint;
  readonly client: ToolgateClient;
  readonly operations: ToolgateOperations;
  close(): Promise<void>;
}

/**
 * Connects a client for one command. With `signer: true` it also loads the approval key from
 * `<dataDir>/keys`, which must already exist: a key the workers do not trust would only produce
 * refused decisions.
 */
export async function openSession(
  flags: ConnectionFlags,
  options: { config: LoadedConfig; signer?: boolean; env?: NodeJS.ProcessEnv },
): Promise<CliSession> {
  const endpoint = await resolveEndpoint(flags, options.config, options.env);
  const { catalog } = options.config;
  let signer: ReturnType<typeof createApprovalSigner> | undefined;
  if (options.signer) {
    const keysDir = join(endpoint.dataDir, 'keys');
    if (!existsSync(join(keysDir, 'approval-private.pem'))) {
      throw new EndpointUnavailableError(
        `No approval key in ${keysDir}. Approve from the data directory of the toolgate deployment (--data-dir), whose workers trust its public key.`,
      );
    }
    signer = createApprovalSigner(await readApprovalPrivateKey(join(keysDir, 'approval-private.pem')));
  }
  let connection: Connection;
  try {
    connection = await Connection.connect({
      ...endpoint.connectionOptions,
      address: endpoint.address,
      connectTimeout: '5 seconds',
    });
  } catch (error) {
    throw new EndpointUnavailableError(
      `Cannot reach Temporal at ${endpoint.address} (from the ${endpoint.source}): ${error instanceof Error ? error.message : String(error)}.${endpoint.source === 'endpoint file' ? ' Is `toolgate dev` running?' : ''}`,
    );
  }
  const temporal = new Client({ connection, namespace: endpoint.namespace });
  const client = new ToolgateClient({
    client: temporal,
    taskQueue: endpoint.taskQueue,
    catalog,
    ...(signer ? { signer } : {}),
    // Any other value is refused by the client, with what to do.
    ...(flags.gateProtocol !== undefined ? { gateProtocol: Number(flags.gateProtocol) as 2 | 3 } : {}),
  });
  return {
    config: options.config,
    endpoint,
    client,
    operations: new ToolgateOperations({ client, catalog }),
    close: () => connection.close(),
  };
}
