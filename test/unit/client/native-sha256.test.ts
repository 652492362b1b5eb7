import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nativeSha256Hex } from '../../../src/client/native-sha256.ts';
import { callFingerprint, sha256Hex } from '../../../src/contracts/fingerprint.ts';
import { prepareCall } from '../../../src/contracts/prepare-call.ts';

// The client fingerprints a call with Node's hash, the workflow checks it with the plain-JavaScript
// one: a single differing digest would turn a retry into KEY_MISMATCH and void an approval.
describe('the native SHA-256 the client uses', () => {
  it('gives the published digests', () => {
    expect(nativeSha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(nativeSha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('equals the workflow-side hash on any string, lone surrogates and astral characters included', () => {
    for (const text of ['\uD800', 'a\uDFFFb', '\uD83D\uDE00', 'é', '\u0000', 'x'.repeat(1_000_000)]) {
      expect(nativeSha256Hex(text)).toBe(sha256Hex(text));
    }
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
        expect(nativeSha256Hex(text)).toBe(sha256Hex(text));
      }),
      { numRuns: 2_000 },
    );
  });

  it('gives the same call fingerprint for any JSON arguments', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), fc.jsonValue(), (tool, input) => {
        expect(callFingerprint(tool, input, nativeSha256Hex)).toBe(callFingerprint(tool, input));
      }),
      { numRuns: 1_000 },
    );
  });

  it('is what prepareCall hashes with when a caller passes it', () => {
    const request = { tool: 'read_config', input: { name: 'région \uD800' } };
    const context = { tenant: 'acme', principal: 'agent-7', principalKind: 'agent' } as const;
    let hashed = 0;
    const counting = (text: string) => {
      hashed++;
      return nativeSha256Hex(text);
    };
    const native = prepareCall(request, context, { unique: 'u1', sha256Hex: counting });
    const plain = prepareCall(request, context, { unique: 'u1' });
    expect(hashed).toBe(1);
    expect(native.ok && plain.ok).toBe(true);
    if (native.ok && plain.ok) expect(native.fingerprint).toBe(plain.fingerprint);
  });
});
