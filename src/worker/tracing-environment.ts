/**
 * Tracing as OpenTelemetry's standard environment variables configure it (docs/operators.md
 * "Traces"), for the processes toolgate runs itself: `toolgate worker`, `dev` and the client
 * commands.
 */
import type { Tracing } from './tracing.ts';

/** Whether the environment asks for traces: an OTLP endpoint is set and the exporter is not `none`. */
export function tracesRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  const endpoint =
    env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']?.trim() || env['OTEL_EXPORTER_OTLP_ENDPOINT']?.trim();
  return Boolean(endpoint) && env['OTEL_TRACES_EXPORTER']?.trim() !== 'none';
}

export interface TracingFromEnvironment extends Tracing {
  /** Sends what is still buffered, and stops the exporter. */
  shutdown(): Promise<void>;
}

/**
 * Tracing as OpenTelemetry's standard variables ask for it: on when `OTEL_EXPORTER_OTLP_ENDPOINT`
 * or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set and `OTEL_TRACES_EXPORTER` is not `none`; spans
 * batched and sent as OTLP over HTTP (the exporter reads the endpoint, headers and timeout from
 * the same variables). `OTEL_SERVICE_NAME` names the service (default `serviceName`). Also makes
 * the caller's active span follow `await` in this process, if nothing else has set that up.
 */
export async function tracingFromEnvironment(
  serviceName: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<TracingFromEnvironment | undefined> {
  if (!tracesRequested(env)) return undefined;
  // Loaded only when asked for: OpenTelemetry's packages cost about 50 ms of start-up.
  const [{ OTLPTraceExporter }, { Resource }, { BatchSpanProcessor }, { ensureContextPropagation }] =
    await Promise.all([
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/sdk-trace-base'),
      import('./tracing.ts'),
    ]);
  ensureContextPropagation();
  const tracesEndpoint = env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']?.trim();
  const url = tracesEndpoint || `${env['OTEL_EXPORTER_OTLP_ENDPOINT']!.trim().replace(/\/+$/, '')}/v1/traces`;
  const spanProcessor = new BatchSpanProcessor(new OTLPTraceExporter({ url }));
  return {
    spanProcessor,
    resource: new Resource({ 'service.name': env['OTEL_SERVICE_NAME']?.trim() || serviceName }),
    shutdown: () => spanProcessor.shutdown(),
  };
}
