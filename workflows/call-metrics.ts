/**
 * toolgate's series from workflow code (docs/operators.md "Metrics"). The SDK's workflow meter
 * emits nothing while a workflow replays, so each call is counted once, when it closes for real.
 * Labels are bounded: a tool name only when the catalog knows it, statuses, reasons, tiers and
 * effects from fixed lists; never a call ID, a tenant or an argument.
 */
import { metricMeter } from '@temporalio/workflow';
import type { CallState } from './call-state.ts';

export function countClosedCall(call: CallState): void {
  const { record, contract } = call;
  metricMeter.createCounter('toolgate_calls_total', undefined, 'Tool calls closed, by outcome.').add(1, {
    tool: contract?.name ?? 'unknown',
    tier: contract?.tier ?? 'unknown',
    status: record.status,
    reason: record.reason ?? 'none',
    effect: record.effect,
  });
}

/** How long a call waited for a human: decided (`approve`, `reject`) or not (`closed`). */
export function observeApprovalWait(tool: string, outcome: string, seconds: number): void {
  metricMeter
    .createHistogram(
      'toolgate_approval_wait_seconds',
      'float',
      's',
      'Time approval-tier calls waited for a decision.',
    )
    .record(seconds, { tool, outcome });
}
