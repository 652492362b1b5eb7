import { Command, CommanderError } from 'commander';
import { toolgateVersion } from '../support/package-version.ts';
import { addCallCommand } from './commands/call.ts';
import { addCancelCommand } from './commands/cancel.ts';
import { addDecisionCommands } from './commands/decide.ts';
import { addDevCommand } from './commands/dev.ts';
import { addGetCommand } from './commands/get.ts';
import { addInboxCommand } from './commands/inbox.ts';
import { addInitCommand } from './commands/init.ts';
import { addListCommand } from './commands/list.ts';
import { addMcpCommand } from './commands/mcp.ts';
import { addReplayCommand } from './commands/replay.ts';
import { addUndoCommand } from './commands/undo.ts';
import { addWorkerCommand } from './commands/worker.ts';
import { ExitCode, printJson } from './output.ts';

/**
 * The toolgate command line. `dev` is the embedded default that `npm start` runs; the other
 * commands find it through the endpoint file it writes into the data directory.
 */
export function buildProgram(): Command {
  const program = new Command('toolgate')
    .description('A durable, gated executor for the tool calls language models ask for, on Temporal.')
    .version(toolgateVersion, '-V, --version', 'print the version of toolgate')
    // Usage errors are thrown to runCli rather than exiting, so that with --json they are JSON too.
    // Set before any command is added: subcommands inherit it.
    .exitOverride()
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText(
      'after',
      [
        '',
        'Client commands find the cluster through --address, then TEMPORAL_ADDRESS, then the',
        '<data-dir>/endpoint.json a running `toolgate dev` writes. Every command takes --json.',
        '',
        'Exit codes: 0 ok · 1 usage or internal error · 2 call denied · 3 call failed, timed out or',
        'cancelled · 4 refused (decision, replay, undo; a cancel that stopped nothing) · 5 no such call',
        '· 6 server or worker unreachable · 130 dev, worker or inbox stopped by a signal during start-up,',
        'or forced by a second one (one Ctrl-C stops them gracefully, exit 0)',
        '',
      ].join('\n'),
    );

  addInitCommand(program);
  addDevCommand(program);
  addWorkerCommand(program);
  addCallCommand(program);
  addGetCommand(program);
  addListCommand(program);
  addDecisionCommands(program);
  addCancelCommand(program);
  addReplayCommand(program);
  addUndoCommand(program);
  addMcpCommand(program);
  addInboxCommand(program);

  return program;
}

/** Parses argv and runs the command; exits non-zero with a one-line message on failure. */
export async function runCli(argv: readonly string[] = process.argv): Promise<void> {
  try {
    await buildProgram().parseAsync([...argv]);
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version end here too, with their own exit code (0).
      if (error.exitCode === 0) return;
      // Commander has printed the message and the hint on stderr; a script reading --json output
      // gets the same as a JSON document on stdout, as for every other error. Not for `mcp`: its
      // stdout carries protocol messages only, and its --json shapes the log on stderr.
      if (argv.includes('--json')) {
        const text = error.message.replace(/^error: /, '');
        if (argv[2] === 'mcp') process.stderr.write(`${JSON.stringify({ level: 'error', message: text })}\n`);
        else printJson({ ok: false, exitCode: ExitCode.error, error: text });
      }
      process.exitCode = ExitCode.error;
      return;
    }
    // dev, worker and inbox end here when they fail: with --json the error is a JSON document on
    // stdout too, and the exit code follows the same mapping as every other command's.
    const { describeCliError } = await import('./errors.ts');
    const { exitCode, message } = describeCliError(error);
    if (argv.includes('--json')) printJson({ ok: false, exitCode, error: message });
    process.stderr.write(`toolgate: ${message}\n`);
    process.exitCode = exitCode;
  }
}
