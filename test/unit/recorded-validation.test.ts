import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createActivities } from '../../activities/create-activities.ts';
import { implementTool } from '../../activities/tool-implementation.ts';
import { addLabel, readConfig, transferFunds } from '../../examples/contracts.ts';
import {
  type AdmitCallRequest,
  type AdmitDecision,
  ToolFailureType,
} from '../../src/contracts/activity-types.ts';
import { createCatalog, defineTool } from '../../src/contracts/define-tool.ts';
import {
  activityAgent as agent,
  activityEnvironment as environment,
  quietLogger as quiet,
  readonlyRunRequest as runRequest,
} from '../support/activity-requests.ts';
import { createMemoryQuotaGate } from '../support/memory-gate.ts';

/**
 * Gate protocol 3: the validation gate is decided by an activity and recorded in history. The
 * `admitCall` local activity checks the arguments of a call it admits; `checkAndRunTool` checks a
 * readonly call's arguments after admitting it, and runs the tool on the parsed input only.
 */
const transfer = {
  reference: 'R-1',
  from: 'ACC-1',
  to: 'ACC-2',
  amountCents: 500,
  currency: 'EUR',
  memo: null,
};

function admitRequest(callId: string, overrides: Partial<AdmitCallRequest> = {}): AdmitCallRequest {
  return {
    callId,
    tool: 'transfer_funds',
    tier: 'approval',
    context: agent,
    check: true,
    input: transfer,
    ...overrides,
  };
}

/** A readonly tool whose schema fills a default, so the parsed input differs from the raw one. */
const pagedSearch = defineTool({
  name: 'paged_search',
  description: 'Search, one page at a time.',
  input: z.strictObject({ query: z.string().min(1), page: z.number().int().min(1).default(1) }),
  tier: 'readonly',
  timeoutMs: 2_000,
});

function recordingTools() {
  const seen: unknown[] = [];
  const tools = [
    implementTool(readConfig, async ({ input }) => {
      seen.push(input);
      return { value: 'eu-west-1' };
    }),
    implementTool(pagedSearch, async ({ input }) => {
      seen.push(input);
      return { hits: [] };
    }),
    implementTool(transferFunds, async ({ input }) => {
      seen.push(input);
      return { transferred: true };
    }),
    implementTool(addLabel, async ({ input }) => {
      seen.push(input);
      return { added: true };
    }),
  ];
  return { tools, seen };
}

async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const error = await promise.catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(ApplicationFailure);
  return error as ApplicationFailure;
}

describe('admitCall with check: the verdict recorded with the admission', () => {
  const activities = (gates: Parameters<typeof createActivities>[0]['admissionGates'] = []) =>
    createActivities({
      tools: recordingTools().tools,
      policy: { allow: ['transfer_funds', 'read_config', 'paged_search'] },
      approvalPublicKeys: [],
      admissionGates: gates,
      logger: quiet,
    });

  it('admits valid arguments as validated, with the approver preview of the parsed input', async () => {
    const decision = await environment().run(activities().admitCall, admitRequest('call-ok'));
    expect(decision).toEqual({
      allowed: true,
      validated: true,
      preview: 'Transfer 5.00 EUR from ACC-1 to ACC-2',
    });
  });

  it('refuses invalid arguments INVALID_INPUT with what is wrong, and hands back the slot it took', async () => {
    const gate = createMemoryQuotaGate({ perTool: { transfer_funds: { maxConcurrent: 1 } } });
    const admitting = activities([gate]);
    const invalid: AdmitDecision = await environment().run(
      admitting.admitCall,
      admitRequest('call-bad', { input: { ...transfer, amountCents: -5 } }),
    );
    expect(invalid).toEqual({ allowed: false, reason: 'INVALID_INPUT', message: expect.any(String) });
    expect(invalid.message).toMatch(/^Invalid arguments: amountCents: /);
    // The only slot is free again: the next call is admitted and holds it.
    const next = await environment().run(admitting.admitCall, admitRequest('call-next'));
    expect(next).toMatchObject({ allowed: true, holdsSlot: true, validated: true });
  });

  it('answers the allowlist first: a tool the caller may not use is NOT_ALLOWED, whatever its arguments', async () => {
    const admitting = createActivities({
      tools: recordingTools().tools,
      policy: { allow: [] },
      approvalPublicKeys: [],
      logger: quiet,
    });
    const decision = await environment().run(
      admitting.admitCall,
      admitRequest('call-na', { input: { amountCents: 'lots' } }),
    );
    expect(decision).toMatchObject({ allowed: false, reason: 'NOT_ALLOWED' });
    expect(decision).not.toHaveProperty('validated');
  });

  it('does not check without `check` (protocols 1 and 2), nor for a tool whose contract it does not know', async () => {
    const unchecked = await environment().run(
      activities().admitCall,
      admitRequest('call-p2', { check: undefined, input: undefined }),
    );
    expect(unchecked).toEqual({ allowed: true });
    const warnings: string[] = [];
    const unknown = await environment().run(
      createActivities({
        tools: [],
        policy: { allow: ['transfer_funds'] },
        approvalPublicKeys: [],
        logger: { ...quiet, warn: (message) => warnings.push(message) },
      }).admitCall,
      admitRequest('call-unknown', { input: { amountCents: 'lots' } }),
    );
    // No verdict: the workflow validates itself, as before protocol 3.
    expect(unknown).toEqual({ allowed: true });
    expect(warnings).toEqual([expect.stringMatching(/no contract for the tool on this worker/)]);
  });

  it('turns a schema that throws into a refusal the model can act on, and logs the error for operators', async () => {
    const broken = defineTool({
      name: 'broken_schema',
      description: 'A tool whose schema has a bug.',
      input: z.strictObject({
        n: z.number().refine(() => {
          throw new RangeError('refinement bug');
        }),
      }),
      tier: 'irreversible',
      timeoutMs: 1_000,
    });
    const errors: Array<Record<string, unknown> | undefined> = [];
    const decision: AdmitDecision = await environment().run(
      createActivities({
        tools: [implementTool(broken, async () => null)],
        policy: { allow: ['broken_schema'] },
        approvalPublicKeys: [],
        logger: { ...quiet, error: (_message, attributes) => errors.push(attributes) },
      }).admitCall,
      admitRequest('call-broken', { tool: 'broken_schema', tier: 'irreversible', input: { n: 1 } }),
    );
    expect(decision).toMatchObject({ allowed: false, reason: 'INVALID_INPUT' });
    expect(decision.message).toMatch(
      /schema failed while checking them \(RangeError\); tell the tool's owner/,
    );
    expect(decision.message).not.toMatch(/refinement bug/);
    expect(errors).toEqual([expect.objectContaining({ error: 'RangeError: refinement bug' })]);
  });
});

describe('checkAndRunTool: the readonly verdict recorded with the execution', () => {
  const activitiesWith = (tools = recordingTools()) => ({
    tools,
    activities: createActivities({
      tools: tools.tools,
      policy: { allow: ['read_config', 'paged_search', 'transfer_funds', 'add_label'] },
      approvalPublicKeys: [],
      logger: quiet,
    }),
  });

  it('runs the tool on the parsed input, defaults filled', async () => {
    const { tools, activities } = activitiesWith();
    const result = await environment().run(
      activities.checkAndRunTool,
      runRequest('call-page', { tool: 'paged_search', input: { query: 'q' } }),
    );
    expect(result).toEqual({ output: { hits: [] }, attempt: 1 });
    expect(tools.seen).toEqual([{ query: 'q', page: 1 }]);
  });

  it('refuses invalid arguments before the tool starts, non-retryable, as a refusal of admission', async () => {
    const { tools, activities } = activitiesWith();
    const failure = await failureOf(
      environment().run(activities.checkAndRunTool, runRequest('call-bad', { input: { name: 7 } })),
    );
    expect(failure.type).toBe(ToolFailureType.denied);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.details?.[0]).toMatchObject({
      reason: 'INVALID_INPUT',
      effect: 'none',
      admission: true,
      attempt: 1,
    });
    expect(failure.message).toMatch(/^Invalid arguments: name: /);
    expect(tools.seen).toEqual([]);
  });

  it('hands back a concurrency slot when the arguments are refused', async () => {
    const tools = recordingTools();
    const gate = createMemoryQuotaGate({ perTool: { read_config: { maxConcurrent: 1 } } });
    const activities = createActivities({
      tools: tools.tools,
      policy: { allow: ['read_config'] },
      approvalPublicKeys: [],
      admissionGates: [gate],
      logger: quiet,
    });
    await failureOf(
      environment().run(activities.checkAndRunTool, runRequest('call-bad', { input: { name: 7 } })),
    );
    await expect(environment().run(activities.checkAndRunTool, runRequest('call-ok'))).resolves.toEqual({
      output: { value: 'eu-west-1' },
      attempt: 1,
    });
  });

  it('says so when arguments admitted earlier fail a schema that changed while the call was open', async () => {
    const { tools, activities } = activitiesWith();
    const failure = await failureOf(
      environment().run(
        activities.checkAndRunTool,
        runRequest('call-changed', {
          tool: 'transfer_funds',
          tier: 'approval',
          admit: undefined,
          validatedAtAdmission: true,
          input: { ...transfer, currency: 'JPY' },
        }),
      ),
    );
    expect(failure.details?.[0]).toMatchObject({ reason: 'INVALID_INPUT', effect: 'none', admission: true });
    expect(failure.message).toMatch(
      /^Invalid arguments: currency: .* The tool's schema changed after this call was admitted; nothing ran\.$/,
    );
    expect(tools.seen).toEqual([]);
  });

  it('does not call a retried call that already ran "nothing ran": a later attempt refused leaves the effect unknown', async () => {
    const { tools, activities } = activitiesWith();
    const failure = await failureOf(
      environment(2).run(
        activities.checkAndRunTool,
        runRequest('call-retried', {
          tool: 'add_label',
          tier: 'reversible',
          admit: undefined,
          validatedAtAdmission: true,
          input: { item: 'doc-1', label: 'NOT LOWER' },
        }),
      ),
    );
    expect(failure.type).toBe(ToolFailureType.failed);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.details?.[0]).toMatchObject({ effect: 'unknown', attempt: 2 });
    expect(failure.details?.[0]).not.toHaveProperty('admission');
    expect(failure.message).toMatch(/an earlier attempt ran; check the current state before repeating it\.$/);
    expect(tools.seen).toEqual([]);
  });

  it('refuses a readonly retry whose arguments no longer pass as a refusal of that attempt only', async () => {
    const { activities } = activitiesWith();
    const failure = await failureOf(
      environment(2).run(activities.checkAndRunTool, runRequest('call-ro-retry', { input: { name: 7 } })),
    );
    expect(failure.type).toBe(ToolFailureType.denied);
    // The workflow counts the attempts that ran from `attempt` (here one).
    expect(failure.details?.[0]).toMatchObject({ reason: 'INVALID_INPUT', admission: true, attempt: 2 });
  });

  it('still reports a tool with no implementation on this worker as missing', async () => {
    const activities = createActivities({
      tools: [],
      catalog: createCatalog([readConfig]),
      policy: { allow: ['read_config'] },
      approvalPublicKeys: [],
      logger: quiet,
    });
    // The catalog knows the contract, so the arguments are checked first; valid ones then find no tool.
    const invalid = await failureOf(
      environment().run(activities.checkAndRunTool, runRequest('call-x', { input: { name: 7 } })),
    );
    expect(invalid.type).toBe(ToolFailureType.denied);
    const missing = await failureOf(environment().run(activities.checkAndRunTool, runRequest('call-y')));
    expect(missing.type).toBe(ToolFailureType.missingImplementation);
  });
});

describe('createActivities and its catalog', () => {
  it('refuses a catalog whose contract is not the one the implementation was built for', () => {
    const lookalike = defineTool({ ...readConfig, input: z.strictObject({ name: z.string() }) });
    expect(() =>
      createActivities({
        tools: recordingTools().tools,
        catalog: createCatalog([lookalike]),
        policy: { allow: [] },
        approvalPublicKeys: [],
      }),
    ).toThrow(/read_config: the catalog and the implementation name different contracts/);
  });
});

describe('the executor and a tool that throws before returning its promise', () => {
  it('classifies the throw as a tool failure, and keeps its message out of the result', async () => {
    const throwsAtOnce = (() => {
      throw new Error('internal detail: db password rejected');
    }) as unknown as Parameters<typeof implementTool>[1];
    const activities = createActivities({
      tools: [implementTool(readConfig, throwsAtOnce)],
      policy: { allow: ['read_config'] },
      approvalPublicKeys: [],
      logger: quiet,
    });
    for (const run of [activities.checkAndRunTool, activities.runTool]) {
      const failure = await failureOf(environment().run(run, runRequest('call-throws')));
      expect(failure.type).toBe(ToolFailureType.failed);
      expect(failure.message).toBe('The tool reported an internal error.');
    }
  });
});
