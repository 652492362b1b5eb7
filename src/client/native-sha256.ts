import { createHash } from 'node:crypto';

/**
 * SHA-256 of a string (UTF-8, lone surrogates as U+FFFD), as lowercase hex, with Node's native
 * hash. The same digest as `sha256Hex` in `src/contracts/fingerprint.ts`, which workflows use
 * because `node:crypto` is not available in their sandbox.
 */
export function nativeSha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}
