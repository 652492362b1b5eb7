import type { z } from 'zod';
import type { CallContext } from '../src/contracts/call-record.ts';
import type { ToolContract } from '../src/contracts/define-tool.ts';

export { ToolDenied, ToolError } from '../src/contracts/errors.ts';

/** What a tool's code receives for one attempt. */
export interface ToolExecution<Input> {
  /** The validated input. */
  readonly input: Input;
  /** Aborted at the executor's deadline or when the caller cancels. Stop promptly when it fires. */
  readonly signal: AbortSignal;
  /**
   * The call's idempotency key, or its call ID when the call has none: the same on every attempt,
   * and never shared with another call. Pass it on to downstream APIs that deduplicate. For a
   * compensation it is the original's key with `:undo` appended.
   */
  readonly key: string;
  readonly callId: string;
  readonly context: CallContext;
  /** 1 on the first attempt. */
  readonly attempt: number;
}

export interface ToolImplementation {
  readonly contract: ToolContract;
  execute(execution: ToolExecution<unknown>): Promise<unknown>;
}

/** What a compensation receives: the original call's input and output. */
export interface CompensationExecution<Input> extends ToolExecution<Input> {
  readonly output: unknown;
}

export interface CompensationImplementation {
  readonly name: string;
  execute(execution: CompensationExecution<unknown>): Promise<unknown>;
}

/** Binds a contract to the code that does the I/O. */
export function implementTool<Schema extends z.ZodType>(
  contract: ToolContract<Schema>,
  execute: (execution: ToolExecution<z.output<Schema>>) => Promise<unknown>,
): ToolImplementation {
  return { contract: contract as unknown as ToolContract, execute: execute as ToolImplementation['execute'] };
}

/** Declares the code that undoes a reversible tool; its name is the contract's `compensation`. */
export function implementCompensation<Schema extends z.ZodType>(
  contract: ToolContract<Schema>,
  execute: (execution: CompensationExecution<z.output<Schema>>) => Promise<unknown>,
): CompensationImplementation {
  if (!contract.compensation)
    throw new TypeError(`Tool ${contract.name} has no compensation in its contract.`);
  return { name: contract.compensation, execute: execute as CompensationImplementation['execute'] };
}
