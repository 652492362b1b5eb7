import { describe, expect, it } from 'vitest';
import { exampleCatalog } from '../../examples/contracts.ts';
import { lookupTool } from '../../src/contracts/define-tool.ts';
import { defaultDeadlineGraceMs, defaultLivenessMs, livenessTimeoutFor } from '../../src/contracts/limits.ts';

const attemptOf = (tool: string) => lookupTool(exampleCatalog, tool)!.timeoutMs + defaultDeadlineGraceMs;

describe('the liveness window (docs/design.md "Liveness and cancellation")', () => {
  it('gives no heartbeat timeout to a tool whose attempt ends within the window: its start-to-close decides', () => {
    // write_report: 5 s deadline + 1 s grace.
    expect(livenessTimeoutFor(attemptOf('write_report'))).toBeUndefined();
    expect(livenessTimeoutFor(defaultLivenessMs)).toBeUndefined();
  });

  it('gives a longer tool the window as its heartbeat timeout, so a dead worker is noticed before its deadline', () => {
    // slow_search: 30 s deadline + 1 s grace.
    expect(livenessTimeoutFor(attemptOf('slow_search'))).toBe(15_000);
    expect(livenessTimeoutFor(defaultLivenessMs + 1)).toBe(defaultLivenessMs);
    expect(livenessTimeoutFor(31_000, 60_000)).toBeUndefined();
    expect(livenessTimeoutFor(90_000, 60_000)).toBe(60_000);
  });
});
