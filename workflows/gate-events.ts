/**
 * A workflow interceptor module that a tracing worker loads with each workflow (never shared, so
 * OpenTelemetry's API may keep its state here): it gives `call-trace.ts` a recorder that writes to
 * the active span, which Temporal's OpenTelemetry interceptors open around the workflow run.
 */
import { trace } from '@opentelemetry/api';
import type { WorkflowInterceptors } from '@temporalio/workflow';
import { type GateRecorder, gateRecorderKey } from './call-trace.ts';

const recorder: GateRecorder = {
  event(name, attributes) {
    trace.getActiveSpan()?.addEvent(name, attributes);
  },
  attributes(attributes) {
    trace.getActiveSpan()?.setAttributes(attributes);
  },
};
(globalThis as { [gateRecorderKey]?: GateRecorder })[gateRecorderKey] = recorder;

/** No interceptors of its own: loading the module is its work. */
export const interceptors = (): WorkflowInterceptors => ({});
