import { z } from 'zod';
import { utf8Length } from './limits.ts';

/** The longest name a file system takes for one part of a path (NAME_MAX on Linux and macOS). */
const maxPartBytes = 255;

export interface RelativePathRules {
  readonly maxLength?: number;
  readonly maxSegments?: number;
}

/** A lexical rule: whether a text breaks it, and the problem named when it does. */
type PathRule = readonly [breaks: (text: string) => boolean, problem: string];

/** Rules for the whole (NFC) path, in the order they are checked. */
const wholePathRules: readonly PathRule[] = [
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused
  [(path) => /[\u0000-\u001f\u007f]/.test(path), 'the path contains a control character'],
  [(path) => path.includes('\\'), 'use / as the separator; backslashes are not allowed'],
  [(path) => path.startsWith('/'), 'the path must be relative to the sandbox, not absolute'],
  [(path) => /^[A-Za-z]:/.test(path), 'drive letters are not allowed'],
  [(path) => path.startsWith('~'), 'home-directory paths are not allowed'],
  [(path) => /%[0-9A-Fa-f]{2}/.test(path), 'percent-encoded characters are not allowed'],
  // Look-alikes of dot, slash and backslash that some layers fold into the real thing.
  [
    (path) => /[\u2024\u2025\u2026\uFE52\uFF0E\u2215\u2044\uFF0F\u29F8\uFE68\uFF3C\u2216]/.test(path),
    'the path contains a look-alike of a dot, slash or backslash',
  ],
  [
    (path) => /[\u200B-\u200F\u202A-\u202E\u2060-\u2064\uFEFF]/.test(path),
    'the path contains invisible characters',
  ],
  [foldsIntoSyntax, 'the path contains a look-alike of a dot, slash, percent sign, colon or tilde'],
];

/** Rules for each part between slashes, in the order they are checked. */
const partRules: readonly PathRule[] = [
  [(part) => part === '', 'the path contains an empty part (// or a trailing /)'],
  [(part) => part === '.' || part === '..', 'the path may not contain . or .. parts'],
  [(part) => /^\.+$/.test(part), 'the path may not contain parts made only of dots'],
  [(part) => part.endsWith('.') || part.endsWith(' '), 'a path part may not end with a dot or a space'],
  [
    (part) => utf8Length(part) > maxPartBytes,
    `a path part is longer than ${maxPartBytes} bytes in UTF-8; each folder or file name is at most ${maxPartBytes} bytes, so use a shorter name`,
  ],
];

/**
 * Whether compatibility folding (NFKC) turns some character into a separator, a dot, a percent
 * sign, a colon or a tilde: some file systems and libraries fold, so refuse rather than guess.
 * Only compared, never used: the path that is checked is the path that is used.
 */
function foldsIntoSyntax(path: string): boolean {
  const folded = path.normalize('NFKC');
  if (folded === path) return false;
  const count = (text: string, character: string) => text.split(character).length - 1;
  return ['/', '\\', '.', '%', ':', '~'].some(
    (character) => count(folded, character) !== count(path, character),
  );
}

function brokenRule(rules: readonly PathRule[], text: string): string | undefined {
  return rules.find(([breaks]) => breaks(text))?.[1];
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
  const pathProblem = brokenRule(wholePathRules, path);
  if (pathProblem) return pathProblem;
  const segments = path.split('/');
  if (segments.length > maxSegments) return `the path has more than ${maxSegments} parts`;
  for (const segment of segments) {
    const partProblem = brokenRule(partRules, segment);
    if (partProblem) return partProblem;
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
