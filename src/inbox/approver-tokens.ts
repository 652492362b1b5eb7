import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, mkdir, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';

/** A person who may sign in to the inbox. Whether they may decide a call is the tool's approvers list. */
export interface InboxApprover {
  readonly name: string;
  readonly roles: readonly string[];
}

const approversFileSchema = z
  .strictObject({
    approvers: z.array(
      z.strictObject({
        name: z.string().min(1).max(128),
        roles: z.array(z.string().min(1).max(64)).max(32).default([]),
        token: z.string().min(16).max(256),
      }),
    ),
  })
  .superRefine((contents, context) => {
    // A shared token signs in as whichever entry comes last, and a repeated name makes two people
    // one in the record of who decided: both are mistakes to fix in the file, not to guess around.
    const why = {
      token: 'give each approver a token of their own',
      name: 'names say who decided, so each must be unique',
    };
    for (const field of ['token', 'name'] as const) {
      const firstAt = new Map<string, number>();
      contents.approvers.forEach((entry, index) => {
        const earlier = firstAt.get(entry[field]);
        if (earlier === undefined) firstAt.set(entry[field], index);
        else {
          context.addIssue({
            code: 'custom',
            path: ['approvers', index, field],
            message: `the same ${field} as approvers[${earlier}]; ${why[field]}`,
          });
        }
      });
    }
  });
export type ApproversFile = z.infer<typeof approversFileSchema>;

/** Looks approvers up by token, comparing hashes in constant time. */
export interface ApproverDirectory {
  readonly file: string;
  authenticate(token: string): InboxApprover | undefined;
}

export function approversFilePath(dataDir: string): string {
  return join(dataDir, 'approvers.json');
}

export function createApproverDirectory(file: string, contents: ApproversFile): ApproverDirectory {
  const digest = (token: string) => createHash('sha256').update(token).digest();
  const entries = contents.approvers.map((entry) => ({
    digest: digest(entry.token),
    approver: { name: entry.name, roles: [...entry.roles] },
  }));
  return {
    file,
    authenticate(token) {
      if (typeof token !== 'string' || token.length === 0 || token.length > 256) return undefined;
      const presented = digest(token);
      // Check every entry, so the time taken does not say which one matched.
      let found: InboxApprover | undefined;
      for (const entry of entries) if (timingSafeEqual(entry.digest, presented)) found = entry.approver;
      return found;
    },
  };
}

export function generateApproverToken(): string {
  return randomBytes(24).toString('base64url');
}

/**
 * Reads `<dataDir>/approvers.json`; on first run creates it (mode 0600) with one approver, `alice`
 * of role `finance`, and a random token, which is returned so it can be printed once.
 *
 * A token shown nowhere is lost: a start that fails after creating the file (the port is taken,
 * say) must call `discard()`, which removes the file, and the data directory when this call created
 * it and it is still empty, so the next start creates, and shows, a new token.
 */
export async function loadOrCreateApproverDirectory(dataDir: string): Promise<{
  directory: ApproverDirectory;
  created?: { name: string; token: string };
  discard?: () => Promise<void>;
}> {
  const file = approversFilePath(dataDir);
  let text: string | undefined;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (text !== undefined) {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      throw new Error(
        `${file} is not valid JSON (${(error as Error).message}); fix it, or move it away to have a new one made with a new token.`,
      );
    }
    const parsed = approversFileSchema.safeParse(json);
    if (!parsed.success) {
      // Paths and messages only: an issue never quotes a value, so no token reaches the log.
      const problems = parsed.error.issues
        .slice(0, 5)
        .map((issue) => `${issue.path.map(String).join('.') || '(top level)'}: ${issue.message}`)
        .join('; ');
      throw new Error(
        `${file} is not a valid approvers file: ${problems}. Expected {"approvers":[{"name","roles","token"}]} with unique names and tokens of 16+ characters.`,
      );
    }
    return { directory: createApproverDirectory(file, parsed.data) };
  }
  const token = generateApproverToken();
  const contents: ApproversFile = { approvers: [{ name: 'alice', roles: ['finance'], token }] };
  // mkdir returns the first directory it created, if any: this call's to remove on discard.
  const createdDirectory = await mkdir(dirname(file), { recursive: true });
  await writeFile(file, `${JSON.stringify(contents, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  await chmod(file, 0o600);
  const discard = async (): Promise<void> => {
    await rm(file, { force: true });
    if (createdDirectory === undefined) return;
    // Only empty directories go: anything another process put there since stays.
    for (let directory = dirname(file); ; directory = dirname(directory)) {
      try {
        await rmdir(directory);
      } catch {
        return;
      }
      if (directory === createdDirectory || dirname(directory) === directory) return;
    }
  };
  return { directory: createApproverDirectory(file, contents), created: { name: 'alice', token }, discard };
}
