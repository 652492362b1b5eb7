import { describe, expect, it } from 'vitest';
import { readStartupLog } from '../../../src/dev/startup-log.ts';

/** A Go panic as the dev server prints it: the cause, then a long dump of goroutine stacks. */
function panicLog(cause: string, stackFrames = 80): string {
  const frames = Array.from(
    { length: stackFrames },
    (_, index) =>
      `go.uber.org/fx.frame${index}(0x1)\n\t/root/go/pkg/mod/go.uber.org/fx@v1.23.0/app.go:${index} +0x9bd`,
  );
  return [
    '=== toolgate: 2026-12-01T18:41:10.000Z temporal server start-dev --port 37137',
    `panic: ${cause}`,
    '',
    'goroutine 1 [running]:',
    ...frames,
    'main.main()',
    '\t/root/go/pkg/mod/github.com/temporalio/cli@v1.5.1/cmd/temporal/main.go:18 +0x96',
    '',
  ].join('\n');
}

describe('readStartupLog', () => {
  it('finds a taken port even when the panic is far above the last lines, and quotes its cause', () => {
    const cause = 'listen tcp 127.0.0.1:41231: bind: address already in use';
    const reading = readStartupLog(panicLog(cause));
    expect(reading.kind).toBe('port-taken');
    expect(reading.excerpt.split('\n')[0]).toBe(`panic: ${cause}`);
    expect(reading.excerpt).toContain('main.main()');
  });

  it('quotes the cause of any other panic, and classifies it as other', () => {
    const reading = readStartupLog(
      panicLog('runtime error: invalid memory address or nil pointer dereference'),
    );
    expect(reading.kind).toBe('other');
    expect(reading.excerpt).toMatch(/^panic: runtime error: invalid memory address/);
  });

  it('recognises a DB file that has no Temporal schema', () => {
    const log =
      'time=2026-12-01T18:00:00.000 level=ERROR msg="unable to start server" error="SQL logic error: no such table: namespaces (1)"\n';
    expect(readStartupLog(log).kind).toBe('incomplete-database');
  });

  it('keeps a short log whole, without repeating its error lines', () => {
    const log = 'time=2026-12-01T18:00:00.000 level=ERROR msg="failed reaching server"\nexit\n';
    const reading = readStartupLog(log);
    expect(reading.kind).toBe('other');
    expect(reading.excerpt).toBe(log.trimEnd());
  });

  it('says so when the start wrote nothing', () => {
    expect(readStartupLog('')).toEqual({ kind: 'other', excerpt: '(the log is empty)' });
  });

  it('cuts very long cause lines and quotes at most five of them', () => {
    const noisy = Array.from({ length: 8 }, (_, index) => `level=ERROR msg="${'x'.repeat(2000)}" n=${index}`);
    const filler = Array.from({ length: 40 }, (_, index) => `line ${index}`);
    const reading = readStartupLog([...noisy, ...filler].join('\n'));
    const quoted = reading.excerpt.split('\n').filter((line) => line.startsWith('level=ERROR'));
    expect(quoted).toHaveLength(5);
    expect(quoted.every((line) => line.length <= 601)).toBe(true);
  });
});
