/**
 * `toolgate/ai-sdk`: the contracts as Vercel AI SDK tools, each `execute` sent through toolgate's
 * gates. Needs the `ai` package (an optional peer dependency of toolgate).
 *
 * ```ts
 * import { generateText } from 'ai';
 * import { toolgateAiTools } from 'toolgate/ai-sdk';
 *
 * const tools = toolgateAiTools({
 *   client: toolgate,
 *   catalog,
 *   context: { tenant: 'acme', principal: 'support-agent', principalKind: 'agent' },
 * });
 * const result = await generateText({ model, tools, prompt: 'Refund order ord_123.' });
 * ```
 */
import { jsonSchema, type Tool, tool } from 'ai';
import type { ToolCatalog, ToolContract } from '../contracts/define-tool.ts';
import {
  concurrencyLimit,
  type RunToolCallsOptions,
  runOneToolCall,
  type ToolCallOutcome,
} from './run-tool-calls.ts';
import { modelDescription, selectContracts, strictInputSchema } from './tool-definitions.ts';

export interface AiSdkToolsOptions extends Omit<RunToolCallsOptions, 'catalog'> {
  readonly catalog: ToolCatalog | readonly ToolContract[];
  /** Only these tools, e.g. the tenant's allowlist. */
  readonly include?: readonly string[];
  /** Send the strict flag to providers that support it (default true). */
  readonly strict?: boolean;
}

/** What a toolgate-backed AI SDK tool returns: the outcome the model is told about. */
export type AiSdkToolOutput = Pick<ToolCallOutcome, 'state' | 'callId' | 'isError' | 'text'>;

/**
 * The contracts as Vercel AI SDK tools. Each `execute` goes through toolgate (gates, key, record), so
 * the SDK never runs a tool itself. The AI SDK runs a step's tool calls concurrently; the tools made
 * by one call of this function share one limit of `maxConcurrency` (default 4).
 *
 * Non-success outcomes reach the model as `error-text` with the same model-safe message the other
 * adapters use. The input schema is the strict one; toolgate's validation gate checks the input, so
 * the SDK is given no validator of its own.
 */
export function toolgateAiTools(options: AiSdkToolsOptions): Record<string, Tool<unknown, AiSdkToolOutput>> {
  const contracts = selectContracts(options.catalog, options.include ? { include: options.include } : {});
  const catalog: ToolCatalog = Object.fromEntries(contracts.map((contract) => [contract.name, contract]));
  const limiter = createLimiter(concurrencyLimit(options.maxConcurrency));
  const runOptions: RunToolCallsOptions = { ...options, catalog };
  const tools: Record<string, Tool<unknown, AiSdkToolOutput>> = {};
  for (const contract of contracts) {
    tools[contract.name] = tool<unknown, AiSdkToolOutput>({
      description: modelDescription(contract),
      inputSchema: jsonSchema<unknown>(strictInputSchema(contract) as Parameters<typeof jsonSchema>[0]),
      ...(options.strict === false ? {} : { strict: true }),
      execute: (input, { toolCallId }) =>
        limiter(async () => {
          const outcome = await runOneToolCall({ id: toolCallId, name: contract.name, input }, runOptions);
          return {
            state: outcome.state,
            ...(outcome.callId ? { callId: outcome.callId } : {}),
            isError: outcome.isError,
            text: outcome.text,
          };
        }),
      toModelOutput: ({ output }) =>
        output.isError ? { type: 'error-text', value: output.text } : { type: 'text', value: output.text },
    });
  }
  return tools;
}

function createLimiter(limit: number): <Result>(work: () => Promise<Result>) => Promise<Result> {
  let running = 0;
  const queue: Array<() => void> = [];
  return async (work) => {
    // A freed slot passes straight to the next waiter, so a newcomer can never slip in between.
    if (running >= limit) await new Promise<void>((resolve) => queue.push(resolve));
    else running++;
    try {
      return await work();
    } finally {
      const nextWaiter = queue.shift();
      if (nextWaiter) nextWaiter();
      else running--;
    }
  };
}
