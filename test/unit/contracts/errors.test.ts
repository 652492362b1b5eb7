import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  NoWorkerAnsweredError,
  OperationalCode,
  ToolDenied,
  ToolError,
  ToolgateError,
  ToolgateUsageError,
  UnknownRunError,
} from '../../../src/contracts/errors.ts';
import { reasonCodes } from '../../../src/contracts/reason-codes.ts';

describe("toolgate's one family of errors", () => {
  it('gives every error a code from the reason-code table or the operational codes', () => {
    const errors = [
      new ToolgateUsageError('x'),
      new ConfigError('x'),
      new NoWorkerAnsweredError('x'),
      new UnknownRunError('x', 'call', 'run'),
      new ToolError('x'),
      new ToolDenied('x', 'NOT_ALLOWED'),
    ];
    const codes = new Set<string>([...Object.keys(reasonCodes), ...Object.values(OperationalCode)]);
    for (const error of errors) {
      expect(error).toBeInstanceOf(ToolgateError);
      expect(error).toBeInstanceOf(Error);
      expect(codes.has(error.code), error.name).toBe(true);
    }
    expect(errors.map((error) => error.code)).toEqual([
      'USAGE',
      'CONFIG',
      'UNAVAILABLE',
      'NOT_FOUND',
      'TOOL_FAILED',
      'NOT_ALLOWED',
    ]);
  });

  it('answers instanceof by class, not by name: a subclass is its parents, a sibling is not', () => {
    const usage = new ToolgateUsageError('x');
    expect(usage).toBeInstanceOf(ToolgateUsageError);
    expect(usage).not.toBeInstanceOf(ConfigError);
    // An error that only borrows the name is not one.
    const impostor = Object.assign(new Error('x'), { name: 'ToolgateUsageError' });
    expect(impostor).not.toBeInstanceOf(ToolgateUsageError);
    expect(impostor).not.toBeInstanceOf(ToolgateError);
  });

  it('holds across two copies of toolgate in one process (the compiled package beside the sources)', async () => {
    const compiled = (await import(
      new URL('../../../dist/src/contracts/errors.js', import.meta.url).href
    )) as typeof import('../../../src/contracts/errors.ts');
    expect(compiled.ToolgateUsageError).not.toBe(ToolgateUsageError);
    expect(new compiled.ToolgateUsageError('x')).toBeInstanceOf(ToolgateUsageError);
    expect(new ToolError('x')).toBeInstanceOf(compiled.ToolError);
    expect(new compiled.ToolDenied('x')).not.toBeInstanceOf(ToolError);
  });

  it('holds across realms: the mark is a symbol of the registry every realm shares', () => {
    const foreign = runInNewContext(
      "const error = new Error('from another realm'); Object.defineProperty(Object.getPrototypeOf(error), Symbol.for('toolgate.error.ToolgateError'), { value: true }); error",
    ) as unknown;
    expect(foreign instanceof Error).toBe(false);
    expect(foreign).toBeInstanceOf(ToolgateError);
    expect(foreign).not.toBeInstanceOf(ToolError);
  });
});
