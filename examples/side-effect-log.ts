import { appendFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Appends one JSON line to a file. The example tools use it for their ledger and for an execution
 * log, so tests can count side effects by reading bytes on disk instead of trusting log text. Each
 * line says when and in which process.
 */
export async function appendJsonLine(file: string, entry: Record<string, unknown>): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  await appendFile(
    file,
    `${JSON.stringify({ ...entry, at: new Date().toISOString(), atMs: Date.now(), pid: process.pid })}\n`,
  );
}
