import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomUUID,
  sign,
} from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DecisionClaims, SignedDecision } from '../contracts/approval.ts';
import { canonicalJson } from '../contracts/canonical-json.ts';

/**
 * Signs approval decisions. Only trusted approval surfaces (the inbox, an operator's CLI) hold the
 * private key; workers hold the public key and verify. Sending a signal is not enough to approve.
 */
export interface ApprovalSigner {
  sign(claims: DecisionClaims): SignedDecision;
}

export function createApprovalSigner(privateKey: KeyObject): ApprovalSigner {
  if (privateKey.asymmetricKeyType !== 'ed25519')
    throw new TypeError('The approval signing key must be an Ed25519 private key.');
  return {
    sign(claims) {
      return {
        claims,
        signature: sign(null, Buffer.from(canonicalJson(claims)), privateKey).toString('base64'),
      };
    },
  };
}

/** Builds the claims for one decision, with a fresh nonce and the current time. */
export function decisionClaims(
  options: Omit<DecisionClaims, 'issuedAt' | 'nonce'> & { issuedAt?: string; nonce?: string },
): DecisionClaims {
  return {
    ...options,
    issuedAt: options.issuedAt ?? new Date().toISOString(),
    nonce: options.nonce ?? randomUUID(),
  };
}

export interface ApprovalKeyFiles {
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  readonly privateKeyFile: string;
  readonly publicKeyFile: string;
}

/**
 * The embedded default's approval keys: created once in `<dir>/approval-private.pem` (mode 0600) and
 * `<dir>/approval-public.pem`, then reused, so approvals keep verifying across restarts.
 */
export async function loadOrCreateApprovalKeys(directory: string): Promise<ApprovalKeyFiles> {
  const privateKeyFile = join(directory, 'approval-private.pem');
  const publicKeyFile = join(directory, 'approval-public.pem');
  try {
    const privateKey = createPrivateKey(await readFile(privateKeyFile));
    const publicKey = createPublicKey(await readFile(publicKeyFile));
    return { privateKey, publicKey, privateKeyFile, publicKeyFile };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(directory, { recursive: true, mode: 0o700 });
  const { privateKey: generated } = generateKeyPairSync('ed25519');
  // 'wx' never replaces a key another process (or an earlier run) already wrote.
  await writeFile(privateKeyFile, generated.export({ type: 'pkcs8', format: 'pem' }), {
    mode: 0o600,
    flag: 'wx',
  }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error;
  });
  await chmod(privateKeyFile, 0o600);
  // The public key is always derived from the private key on disk, so the pair can never disagree,
  // whoever won a race to create them or whichever file was missing.
  const privateKey = createPrivateKey(await readFile(privateKeyFile));
  const publicKey = createPublicKey(privateKey);
  const publicPem = publicKey.export({ type: 'spki', format: 'pem' });
  const existing = await readFile(publicKeyFile, 'utf8').catch(() => undefined);
  if (existing !== publicPem) await writeFile(publicKeyFile, publicPem);
  return { privateKey, publicKey, privateKeyFile, publicKeyFile };
}

/** Loads a public key for verification, from a PEM file. */
export async function loadPublicKey(file: string): Promise<KeyObject> {
  return createPublicKey(await readFile(file));
}
