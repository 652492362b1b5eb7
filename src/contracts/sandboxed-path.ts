import { z } from 'zod';
import { utf8Length } from './limits.ts';

/** The longest name a file system takes for one part of a path (NAME_MAX on Linux and macOS). */
const maxPartBytes = 255;

export interface RelativePathRules {
  readonly maxLength?: number;
  readonly maxSegments?: number;
}

/**
 * Why a sandbox-relative path is refused, or undefined when it passes the lexical check. This is the
 * first of two checks: it runs in the contract, on the text alone. The second runs at execution
 * time against the real file system (realpath, symlinks, O_NOFOLLOW).
 *
 * The text is normalised to NFC first and never decoded afterwards, so `%2e%2e` stays a literal
 * file name and cannot turn into `..` later.
 */
export function relativePathProblem(raw: string, rules: RelativePathRules = {}): string | undefined {
  const maxLength = rules.maxLength ?? 255;
  const maxSegments = rules.maxSegments ?? 16;
  // A lone surrogate is half of a character: file systems store it as a replacement character or
  // refuse it, so the name used would differ from the name checked. \p{Surrogate} with the u flag
  // matches only unpaired halves (String.prototype.isWellFormed, outside the ES2023 typings here).
  if (/\p{Surrogate}/u.test(raw)) {
    return 'the path contains a broken character (half of a UTF-16 surrogate pair); send it as valid Unicode text';
  }
  const path = raw.normalize('NFC');
  if (path.length === 0) return 'the path is empty';
  if (path.length > maxLength) return `the path is longer than ${maxLength} characters`;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused
  if (/[\u0000-\u001f\u007f]/.test(path)) return 'the path contains a control character';
  if (path.includes('\\')) return 'use / as the separator; backslashes are not allowed';
  if (path.startsWith('/')) return 'the path must be relative to the sandbox, not absolute';
  if (/^[A-Za-z]:/.test(path)) return 'drive letters are not allowed';
  if (path.startsWith('~')) return 'home-directory paths are not allowed';
  if (/%[0-9A-Fa-f]{2}/.test(path)) return 'percent-encoded characters are not allowed';
  // Look-alikes of dot, slash and backslash that some layers fold into the real thing.
  if (/[\u2024\u2025\u2026\uFE52\uFF0E\u2215\u2044\uFF0F\u29F8\uFE68\uFF3C\u2216]/.test(path)) {
    return 'the path contains a look-alike of a dot, slash or backslash';
  }
  if (/[\u200B-\u200F\u202A-\u202E\u2060-\u2064\uFEFF]/.test(path))
    return 'the path contains invisible characters';
  // Any other character that compatibility folding (NFKC) turns into a separator, a dot, a percent
  // sign, a colon or a tilde: some file systems and libraries fold, so refuse rather than guess.
  // Only compared, never used: the path that is checked is the path that is used.
  const folded = path.normalize('NFKC');
  if (folded !== path) {
    const count = (text: string, character: string) => text.split(character).length - 1;
    if (
      ['/', '\\', '.', '%', ':', '~'].some((character) => count(folded, character) !== count(path, character))
    ) {
      return 'the path contains a look-alike of a dot, slash, percent sign, colon or tilde';
    }
  }
  const segments = path.split('/');
  if (segments.length > maxSegments) return `the path has more than ${maxSegments} parts`;
  for (const segment of segments) {
    if (segment === '') return 'the path contains an empty part (// or a trailing /)';
    if (segment === '.' || segment === '..') return 'the path may not contain . or .. parts';
    if (/^\.+$/.test(segment)) return 'the path may not contain parts made only of dots';
    if (segment.endsWith('.') || segment.endsWith(' '))
      return 'a path part may not end with a dot or a space';
    if (utf8Length(segment) > maxPartBytes) {
      return `a path part is longer than ${maxPartBytes} bytes in UTF-8; each folder or file name is at most ${maxPartBytes} bytes, so use a shorter name`;
    }
  }
  return undefined;
}

/** A zod schema for a path inside a sandbox, refused by the lexical rules above. */
export function sandboxedRelativePath(rules: RelativePathRules = {}) {
  return z.string().superRefine((value, context) => {
    const problem = relativePathProblem(value, rules);
    if (problem) context.addIssue({ code: 'custom', message: `Path refused: ${problem}.` });
  });
}
