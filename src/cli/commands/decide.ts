import { WorkflowNotFoundError } from '@temporalio/client';
import type { Command } from 'commander';
import { decisionClaimsProblem } from '../../client/approval-signer.ts';
import { ToolgateUsageError } from '../../client/toolgate-client.ts';
import { helpExamples, withConnectionOptions } from '../options.ts';
import { describeRecord, ExitCode, exitCodeForRecord, printJson, printLines, safeText } from '../output.ts';
import { type CommonFlags, cliWait, printJsonOutcome, recordError, runWithSession } from '../run-command.ts';

/** A Temporal run ID: a UUID. */
const runIdPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The flags of `approve` and `reject`, checked before anything connects or is signed, by the rules
 * the workers check the signed claims with (src/contracts/approval.ts), plus the CLI's own: a
 * rejection says why, and `--run` is a run ID.
 */
export function checkDecisionFlags(
  decision: 'approve' | 'reject',
  flags: { as: string; role?: string[]; comment?: string; reason?: string; run?: string },
): void {
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
      .action(
        async (
          id: string,
          flags: CommonFlags & {
            as: string;
            role?: string[];
            run?: string;
            comment?: string;
            reason?: string;
            wait?: boolean;
          },
        ) =>
          runWithSession(
            flags,
            { signer: true, check: () => checkDecisionFlags(decision, flags) },
            async ({ client }) => {
              const comment = decision === 'approve' ? flags.comment : flags.reason?.trim();
              if (flags.run !== undefined) {
                // A run ID of no run of this call is a mistake in what was typed or pasted, not a
                // restart: say so. (A call that does not exist at all is "no such call" below.)
                const ofRun = await client.temporal.workflow
                  .getHandle(id, flags.run)
                  .describe()
                  .then(
                    () => true,
                    (error: unknown) => {
                      if (error instanceof WorkflowNotFoundError) return false;
                      throw error;
                    },
                  );
                if (!ofRun) {
                  await client.temporal.workflow.getHandle(id).describe();
                  const message = `The call ${id} has no run ${flags.run}: check the run ID (\`toolgate get <id>\` prints the current one on its "run" line). Nothing was signed or sent.`;
                  if (flags.json) printJson({ ok: false, exitCode: ExitCode.notFound, error: message });
                  else process.stderr.write(`toolgate: ${message}\n`);
                  return ExitCode.notFound;
                }
              }
              const options = {
                approver: flags.as,
                ...(flags.role ? { roles: flags.role } : {}),
                ...(comment !== undefined ? { comment } : {}),
                ...(flags.run !== undefined ? { runId: flags.run } : {}),
              };
              const outcome =
                decision === 'approve' ? await client.approve(id, options) : await client.reject(id, options);
              let exitCode: ExitCode = outcome.accepted
                ? ExitCode.ok
                : outcome.state === 'delivered'
                  ? ExitCode.unavailable
                  : ExitCode.refused;
              let record = outcome.record;
              if (outcome.accepted && flags.wait) {
                record = await client.result(id, undefined, cliWait);
                exitCode = exitCodeForRecord(record);
              }
              if (flags.json)
                printJsonOutcome({ ...outcome, ...(record ? { record } : {}) }, exitCode, () =>
                  outcome.accepted && record
                    ? recordError(record)
                    : `The decision did not count: ${outcome.reason ?? outcome.state}.`,
                );
              else {
                printLines([
                  outcome.accepted
                    ? `${decision === 'approve' ? 'Approved' : 'Rejected'} ${safeText(id, 400)} as ${safeText(flags.as, 130)}.`
                    : `The decision did not count: ${safeText(outcome.reason ?? outcome.state, 400)}.`,
                  ...(record ? ['', ...describeRecord(record)] : []),
                ]);
              }
              return exitCode;
            },
          ),
      );
  }
}
