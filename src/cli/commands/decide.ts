import type { Command } from 'commander';
import { ToolgateUsageError } from '../../client/errors.ts';
import type { DecisionOutcome, ToolgateClient } from '../../client/toolgate-client.ts';
import type { LoadedConfig } from '../../config/load-config.ts';
import type { CallRecord } from '../../contracts/call-record.ts';
import { normalizeName } from '../../policy/approver-names.ts';
import type { CliSession } from '../endpoint.ts';
import { helpExamples, withConnectionOptions } from '../options.ts';
import { describeRecord, ExitCode, exitCodeForRecord, printJson, printLines, safeText } from '../output.ts';
import { type CommonFlags, cliWait, printJsonOutcome, recordError, runWithSession } from '../run-command.ts';

/**
 * Who signs: with an approvers section in the config, the listed approver `--as` names (compared
 * without case) with the roles the config gives them, and `--role` may only repeat those; without
 * one, `--as` and `--role` as typed. A string is the refusal, nothing signed.
 */
export function approverIdentity(
  flags: { readonly as: string; readonly role?: readonly string[] },
  config: Pick<LoadedConfig, 'approvers' | 'file'>,
): { name: string; roles?: readonly string[] } | string {
  if (!config.approvers) return { name: flags.as, ...(flags.role ? { roles: flags.role } : {}) };
  const wanted = normalizeName(flags.as);
  const entry = config.approvers.find((approver) => normalizeName(approver.name) === wanted);
  if (!entry) {
    const names = config.approvers.map((approver) => approver.name).join(', ') || 'none';
    return `${JSON.stringify(flags.as)} is not an approver in ${config.file} (approvers: ${names}). Nothing was signed or sent.`;
  }
  const roles = entry.roles ?? [];
  const extra = (flags.role ?? []).filter((role) => !roles.includes(role));
  if (extra.length > 0) {
    return `--role ${extra.join(', ')}: ${entry.name} does not hold ${extra.length > 1 ? 'these roles' : 'this role'} in ${config.file} (roles: ${roles.join(', ') || 'none'}). Nothing was signed or sent.`;
  }
  return { name: entry.name, roles };
}

/** A Temporal run ID: a UUID. */
const runIdPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The flags of `approve` and `reject`, checked before anything connects or is signed, by the rules
 * the workers check the signed claims with (src/contracts/approval.ts), plus the CLI's own: a
 * rejection says why, and `--run` is a run ID.
 */
export async function checkDecisionFlags(
  decision: 'approve' | 'reject',
  flags: { as: string; role?: string[]; comment?: string; reason?: string; run?: string },
): Promise<void> {
  const { decisionClaimsProblem } = await import('../../client/approval-signer.ts');
  const commentFlag = decision === 'approve' ? '--comment' : '--reason';
  const comment = decision === 'approve' ? flags.comment : flags.reason;
  if (decision === 'reject' && (comment === undefined || comment.trim() === '')) {
    throw new ToolgateUsageError(
      '--reason is empty: say why you reject the call (it is recorded with the decision).',
    );
  }
  if (flags.as.trim() === '') {
    throw new ToolgateUsageError(
      '--as is empty: give your approver name, as listed in the tool’s approvers.',
    );
  }
  const problem = decisionClaimsProblem(
    {
      approver: flags.as,
      roles: flags.role ?? [],
      ...(comment !== undefined ? { comment } : {}),
    },
    { partial: true, labels: { approver: '--as', roles: '--role', comment: commentFlag } },
  );
  if (problem !== undefined) throw new ToolgateUsageError(`Nothing was signed or sent: ${problem}.`);
  if (flags.run !== undefined && !runIdPattern.test(flags.run)) {
    throw new ToolgateUsageError(
      `--run ${JSON.stringify(flags.run.slice(0, 80))} is not a run ID: run IDs are UUIDs, as \`toolgate get <id>\` prints them on the "run" line.`,
    );
  }
}

type DecisionFlags = CommonFlags & {
  as: string;
  role?: string[];
  run?: string;
  comment?: string;
  reason?: string;
  wait?: boolean;
};

/** Signs and sends the decision, then, with `--wait`, waits for the call to finish. */
async function decide(
  decision: 'approve' | 'reject',
  id: string,
  flags: DecisionFlags,
  { client, config }: CliSession,
): Promise<ExitCode> {
  const comment = decision === 'approve' ? flags.comment : flags.reason?.trim();
  const identity = approverIdentity(flags, config);
  if (typeof identity === 'string') return reportRefusal(flags.json, ExitCode.refused, identity);
  const runRefusal = await checkRunFlag(client, id, flags.run, flags.json);
  if (runRefusal !== undefined) return runRefusal;
  const options = {
    approver: identity.name,
    ...(identity.roles ? { roles: identity.roles } : {}),
    ...(comment !== undefined ? { comment } : {}),
    ...(flags.run !== undefined ? { runId: flags.run } : {}),
  };
  const outcome =
    decision === 'approve' ? await client.approve(id, options) : await client.reject(id, options);
  if (!(outcome.accepted && flags.wait)) {
    return reportDecision(decision, id, flags, outcome, outcome.record, decisionExitCode(outcome));
  }
  const record = await client.result(id, undefined, cliWait);
  return reportDecision(decision, id, flags, outcome, record, exitCodeForRecord(record));
}

/** A refusal before anything is signed or sent: JSON on stdout with `--json`, a line on stderr otherwise. */
function reportRefusal(json: boolean | undefined, exitCode: ExitCode, message: string): ExitCode {
  if (json) printJson({ ok: false, exitCode, error: message });
  else process.stderr.write(`toolgate: ${message}\n`);
  return exitCode;
}

/**
 * Refuses a `--run` that names no run of the call, before anything is signed; undefined when it
 * names one, or is not given. A run ID of no run of this call is a mistake in what was typed or
 * pasted, not a restart: say so. (A call that does not exist at all is "no such call": describing
 * it throws.)
 */
async function checkRunFlag(
  client: ToolgateClient,
  id: string,
  runId: string | undefined,
  json: boolean | undefined,
): Promise<ExitCode | undefined> {
  if (runId === undefined || (await isRunOf(client, id, runId))) return undefined;
  await client.temporal.workflow.getHandle(id).describe();
  return reportRefusal(
    json,
    ExitCode.notFound,
    `The call ${id} has no run ${runId}: check the run ID (\`toolgate get <id>\` prints the current one on its "run" line). Nothing was signed or sent.`,
  );
}

async function isRunOf(client: ToolgateClient, id: string, runId: string): Promise<boolean> {
  const { WorkflowNotFoundError } = await import('@temporalio/client');
  return client.temporal.workflow
    .getHandle(id, runId)
    .describe()
    .then(
      () => true,
      (error: unknown) => {
        if (error instanceof WorkflowNotFoundError) return false;
        throw error;
      },
    );
}

/** The worker's answer: counted, or refused (no worker at all throws, and exits `unavailable`). */
function decisionExitCode(outcome: DecisionOutcome): ExitCode {
  return outcome.accepted ? ExitCode.ok : ExitCode.refused;
}

function reportDecision(
  decision: 'approve' | 'reject',
  id: string,
  flags: Pick<DecisionFlags, 'as' | 'json'>,
  outcome: DecisionOutcome,
  record: CallRecord | undefined,
  exitCode: ExitCode,
): ExitCode {
  if (flags.json) {
    printJsonOutcome({ ...outcome, ...(record ? { record } : {}) }, exitCode, () =>
      outcome.accepted && record
        ? recordError(record)
        : `The decision did not count: ${outcome.reason ?? outcome.state}.`,
    );
    return exitCode;
  }
  printLines([
    outcome.accepted
      ? `${decision === 'approve' ? 'Approved' : 'Rejected'} ${safeText(id, 400)} as ${safeText(flags.as, 130)}${outcome.reason ? ` (${safeText(outcome.reason, 200)})` : ''}.`
      : `The decision did not count: ${safeText(outcome.reason ?? outcome.state, 400)}.`,
    ...(record ? ['', ...describeRecord(record)] : []),
  ]);
  return exitCode;
}

export function addDecisionCommands(program: Command): void {
  for (const decision of ['approve', 'reject'] as const) {
    const command = withConnectionOptions(
      program
        .command(`${decision} <id>`)
        .description(
          decision === 'approve'
            ? 'Approve a call that waits for a human, signed with the approval key of the data directory.'
            : 'Reject a call that waits for a human; nothing runs.',
        )
        .requiredOption('--as <approver>', 'your approver name, as listed in the tool’s approvers')
        .option('--role <role...>', 'your roles, matched against role:<name> approvers')
        .option(
          '--run <runId>',
          'decide only this run, the one whose arguments you read (`toolgate get` prints it as "run"); refused if the call was restarted since',
        )
        .option('--wait', 'after the decision counts, wait for the call to finish and exit with its outcome'),
    );
    if (decision === 'approve') command.option('--comment <text>', 'a comment recorded with the decision');
    else command.requiredOption('--reason <text>', 'why; recorded with the decision');
    command
      .addHelpText(
        'after',
        helpExamples(
          decision === 'approve'
            ? [
                'toolgate approve toolgate/default/transfer_funds/k/transfer-inv-42 --as alice --comment "matches invoice"',
                'toolgate approve <id> --as carol --role finance --wait --json',
                'toolgate approve <id> --as alice --run 0193c0de-… # only the run you read with `toolgate get <id>`',
              ]
            : [
                'toolgate reject toolgate/default/transfer_funds/k/transfer-inv-42 --as alice --reason "wrong account"',
              ],
        ) +
          (decision === 'approve'
            ? '\n--as, --role and --comment are checked before anything is signed: a name of 1-128 characters, at most 32 roles of at most 64 characters, a comment of at most 2000 characters.'
            : '\n--reason is required and may not be blank; it is checked before anything is signed: at most 2000 characters, and --as a name of 1-128 characters.') +
          '\nExit codes: 0 the decision counted, 1 usage (a flag over its limit, an empty --as or --reason, a --run that is not a run ID), 4 refused (not an approver, requester, already decided, closed, or --run is not the current run), 5 no such call, or --run names no run of it, 6 no worker answered.\n',
      )
      .action(async (id: string, flags: DecisionFlags) =>
        runWithSession(flags, { signer: true, check: () => checkDecisionFlags(decision, flags) }, (session) =>
          decide(decision, id, flags, session),
        ),
      );
  }
}
