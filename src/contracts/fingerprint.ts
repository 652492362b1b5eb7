import { sha256 } from '@noble/hashes/sha2';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';
import { canonicalJson } from './canonical-json.ts';

/** SHA-256 of a string, as lowercase hex. Pure code, so it also runs inside workflows. */
export function sha256Hex(text: string): string {
  return bytesToHex(sha256(utf8ToBytes(text)));
}

/**
 * The fingerprint of a call: SHA-256 over the canonical JSON of `(tool, input)`. A reused key must
 * come with the same fingerprint, and an approval binds to it. `hash` must be SHA-256 as lowercase
 * hex; outside workflows a caller may pass a native one (`src/client/native-sha256.ts`), which a
 * unit test holds equal to this plain-JavaScript default.
 */
export function callFingerprint(
  tool: string,
  input: unknown,
  hash: (text: string) => string = sha256Hex,
): string {
  return hash(canonicalJson({ tool, input }));
}
