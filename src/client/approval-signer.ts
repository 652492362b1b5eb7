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
import { type DecisionClaims, decisionClaimsSchema, type SignedDecision } from '../contracts/approval.ts';
import { canonicalJson } from '../contracts/canonical-json.ts';
import { InvalidDecisionClaimsError } from '../contracts/errors.ts';

export { InvalidDecisionClaimsError };

/**
 * Signs approval decisions. Only trusted approval surfaces (the inbox, an operator's CLI) hold the
 * private key; workers hold the public key and verify. Sending a signal is not enough to approve.
 */
export interface ApprovalSigner {
  sign(claims: DecisionClaims): SignedDecision;
}

/** How each claim is named in a problem; callers (the CLI) may name their flags instead. */
export type DecisionClaimLabels = Partial<Record<keyof DecisionClaims, string>>;

const defaultClaimLabels: Required<DecisionClaimLabels> = {
  callId: 'the call ID',
  runId: 'the run ID',
  decision: 'the decision',
  approver: 'the approver name',
  approverKind: 'the approver kind',
  roles: 'the roles',
  fingerprint: 'the fingerprint',
  comment: 'the comment',
  issuedAt: 'the issue time',
  nonce: 'the nonce',
};

/**
 * What is wrong with (some of) a decision's claims, by the schema the workers verify them with, or
 * undefined when nothing is. `partial` limits the check to the claims given (the CLI checks its
 * flags before it connects); by default every claim is checked.
 */
export function decisionClaimsProblem(
  claims: Partial<DecisionClaims>,
  options: { partial?: boolean; labels?: DecisionClaimLabels } = {},
): string | undefined {
  const schema = options.partial ? decisionClaimsSchema.partial() : decisionClaimsSchema;
  const parsed = schema.safeParse(claims);
  if (parsed.success) return undefined;
  const labels = { ...defaultClaimLabels, ...options.labels };
  const problems = parsed.error.issues.map((issue) => {
    const [field, index] = issue.path;
    const base = labels[field as keyof DecisionClaims] ?? String(field ?? 'the claims');
    const label = typeof index === 'number' ? `${base} (entry ${index + 1})` : base;
    let value: unknown = claims;
    for (const key of issue.path) value = (value as Record<PropertyKey, unknown> | undefined)?.[key];
    if (issue.code === 'too_big') {
      const counted = typeof value === 'string' ? 'characters' : 'entries';
      const size = typeof value === 'string' || Array.isArray(value) ? ` (${value.length} given)` : '';
      return `${label} may have at most ${String(issue.maximum)} ${counted}${size}`;
    }
    if (issue.code === 'too_small') {
      return Number(issue.minimum) <= 1
        ? `${label} must not be empty`
        : `${label} must have at least ${String(issue.minimum)} characters`;
    }
    return `${label} is invalid: ${issue.message}`;
  });
  return [...new Set(problems)].join('; ');
}

/** Throws {@link InvalidDecisionClaimsError} when the claims break the workers' rules. */
export function assertDecisionClaims(claims: DecisionClaims): void {
  const problem = decisionClaimsProblem(claims);
  if (problem !== undefined) {
    throw new InvalidDecisionClaimsError(
      `The decision was not signed or sent: ${problem}. The workers would refuse it.`,
    );
  }
}

export function createApprovalSigner(privateKey: KeyObject): ApprovalSigner {
  if (privateKey.asymmetricKeyType !== 'ed25519')
    throw new TypeError('The approval signing key must be an Ed25519 private key.');
  return {
    sign(claims) {
      // A decision the workers cannot parse is recorded on the call as forged; refuse it here.
      assertDecisionClaims(claims);
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
