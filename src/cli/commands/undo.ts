import type { Command } from 'commander';
import { currentUser, helpExamples, withConnectionOptions } from '../options.ts';
import { ExitCode, printJson, printLines, safeText } from '../output.ts';
import { type CommonFlags, printJsonOutcome, runWithSession } from '../run-command.ts';

export function addUndoCommand(program: Command): void {
  withConnectionOptions(
    program
      .command('undo <id>')
      .description(
        'Run the compensation of a succeeded reversible call. Runs once, however often it is asked.',
      )
      .option('--as <operator>', 'who is undoing; recorded on the call (default: your user name)'),
  )
    .addHelpText(
      'after',
      helpExamples([
        'toolgate undo toolgate/default/add_label/~9a0b…',
        'toolgate undo <id> --as oscar --json',
      ]) +
        '\nExit codes: 0 undone (now or by an earlier undo), 4 refused or the compensation failed, 5 no such call.\n',
    )
    .action(async (id: string, flags: CommonFlags & { as?: string }) =>
      runWithSession(flags, {}, async ({ operations }) => {
        const outcome = await operations.undo(id, { operator: flags.as ?? currentUser() });
        if (!outcome.undone) {
          const exitCode = outcome.refusal.startsWith('There is no call')
            ? ExitCode.notFound
            : ExitCode.refused;
          if (flags.json)
            printJsonOutcome(outcome, exitCode, () =>
              exitCode === ExitCode.notFound ? outcome.refusal : `The undo was refused: ${outcome.refusal}`,
            );
          else process.stderr.write(`toolgate: undo refused: ${safeText(outcome.refusal, 600)}\n`);
          return exitCode;
        }
        if (flags.json) printJson(outcome);
        else {
          printLines([
            outcome.alreadyDone
              ? `${safeText(id, 400)} was already undone by ${safeText(outcome.undo.operator, 130)} at ${safeText(outcome.undo.at, 64)}; the compensation did not run again.`
              : `Undone: ${safeText(outcome.result.compensation, 130)} ran for ${safeText(id, 400)}.`,
          ]);
        }
        return ExitCode.ok;
      }),
    );
}
