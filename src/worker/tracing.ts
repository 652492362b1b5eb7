/**
 * OpenTelemetry traces for toolgate (docs/operators.md "Traces"): one trace per call, from the
 * caller's span through the workflow to the tool's activity, with the gates' decisions as events on
 * the workflow's span. Built on Temporal's own interceptors (`@temporalio/interceptors-opentelemetry`,
 * which speaks OpenTelemetry's 1.x packages); toolgate adds the gate events and the wiring.
 */
import { createRequire } from 'node:module';
import { context as otelContext, propagation, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import {
  OpenTelemetryPlugin,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import { modulePath } from '../support/module-path.ts';

export interface Tracing {
  /** Where finished spans go: a `BatchSpanProcessor` around an exporter, for instance. */
  readonly spanProcessor: SpanProcessor;
  /** Resource attributes for every span; default `service.name` = `toolgate`. */
  readonly resource?: Resource;
}

/**
 * The modules that trace inside the workflow sandbox: Temporal's interceptors, and toolgate's gate
 * events (workflows/gate-events.ts). A worker that bundles its own workflows adds them; a prebuilt
 * bundle must have been made with `bundleToolgateWorkflows(path, { tracing: true })`.
 */
export const gateEventsModule = modulePath('../../workflows/gate-events', import.meta.url);
export const tracingWorkflowModules: readonly string[] = [
  createRequire(import.meta.url).resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
  gateEventsModule,
];

/** Whether a prebuilt workflow bundle carries the tracing module. */
export function bundleTraces(code: string): boolean {
  return code.includes('OpenTelemetryInboundInterceptor');
}

const defaultResource = () => new Resource({ 'service.name': 'toolgate' });

/** One tracer provider per span processor, so the activity spans of several workers do not mix. */
const tracers = new WeakMap<SpanProcessor, Tracer>();

/**
 * The tracer for spans made outside the workflow sandbox (the client's, the activities'): its own
 * provider, not the global one, so toolgate's spans go to the processor given here, and an
 * application's global OpenTelemetry setup stays as it is.
 */
export function tracerFor(tracing: Tracing): Tracer {
  ensureContextPropagation();
  let tracer = tracers.get(tracing.spanProcessor);
  if (!tracer) {
    const provider = new BasicTracerProvider({
      resource: tracing.resource ?? defaultResource(),
      spanProcessors: [tracing.spanProcessor],
    });
    tracer = provider.getTracer('toolgate');
    tracers.set(tracing.spanProcessor, tracer);
  }
  return tracer;
}

/** The Temporal worker plugin that traces workflows and activities into `tracing.spanProcessor`. */
export function tracingPlugin(tracing: Tracing): OpenTelemetryPlugin {
  return new OpenTelemetryPlugin({
    resource: tracing.resource ?? defaultResource(),
    spanProcessor: tracing.spanProcessor,
    tracer: tracerFor(tracing),
  });
}

/**
 * The interceptor to give the caller's Temporal `Client` (`interceptors: { workflow: [...] }`): it
 * opens a span per start, signal or update, as a child of the caller's active span, and carries
 * it to the workflow in the request headers.
 */
export function tracingClientInterceptor(tracing: Tracing): OpenTelemetryWorkflowClientInterceptor {
  return new OpenTelemetryWorkflowClientInterceptor({ tracer: tracerFor(tracing) });
}

/**
 * A trace crosses processes in the headers of Temporal's requests, written and read by the global
 * propagator, and follows `await` within a process by the global context manager. An application
 * that set up OpenTelemetry has both; where nothing is registered yet, toolgate registers W3C
 * trace context (and baggage) and an AsyncLocalStorage context manager, which is what
 * OpenTelemetry's own Node SDK would. What is registered already is left as it is.
 */
export function ensureContextPropagation(): void {
  if (propagation.fields().length === 0) {
    propagation.setGlobalPropagator(
      new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
    );
  }
  if (!contextManagerSet) {
    contextManagerSet = true;
    const manager = new AsyncLocalStorageContextManager();
    // False when the application registered its own: then the new one is not used.
    if (otelContext.setGlobalContextManager(manager)) manager.enable();
  }
}

let contextManagerSet = false;
