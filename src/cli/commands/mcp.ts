import { type Command, Option } from 'commander';
import { ToolgateUsageError } from '../../client/errors.ts';
import type { PrincipalKind } from '../../contracts/call-record.ts';
import type { ToolCatalog } from '../../contracts/define-tool.ts';
import { callContextOf, currentUser, withConnectionOptions } from '../options.ts';
import { formatJson, safeText } from '../output.ts';
import type { CommonFlags } from '../run-command.ts';

/** Matches `defaultMcpNoWorkerAfterMs` in src/agent/mcp.ts (checked by a unit test), without loading it for --help. */
export const defaultWorkerWaitSeconds = 30;

type McpFlags = CommonFlags & {
  tenant: string;
  principal?: string;
  principalKind: PrincipalKind;
  tools?: string;
  maxConcurrency: string;
  waitForApproval?: boolean;
  workerWait: string;
};

const mcpHelpText = [
  '',
  'Register it with an MCP client (Claude Desktop, Claude Code, Cursor… ) as a stdio server,',
  'for instance in the client’s JSON config:',
  '',
  '  {',
  '    "mcpServers": {',
  '      "toolgate": {',
  '        "command": "npx",',
  '        "args": ["toolgate", "mcp", "--tenant", "acme", "--principal", "desktop-agent"],',
  '        "env": { "TOOLGATE_DATA_DIR": "/path/to/project/.toolgate" }',
  '      }',
  '    }',
  '  }',
  '',
  'or: claude mcp add toolgate -- npx toolgate mcp --tenant acme',
  '',
  'It joins the cluster a running `toolgate dev` wrote to <data-dir>/endpoint.json (or',
  '--address / TEMPORAL_ADDRESS); a worker must serve the task queue. Give the client an',
  'absolute --data-dir or TOOLGATE_DATA_DIR: it may start the server in another folder.',
  'A call that waits for a human is answered "Pending: … Call ID: …" at once, unless',
  '--wait-for-approval. A call no worker picks up within --worker-wait seconds (default 30)',
  'is answered pending too, with a warning in the log: it stays open and runs when a worker',
  'starts. Do not let the client retry it.',
  '',
  'Exit codes: 0 the client closed stdin or a signal stopped it, 6 server unreachable.',
  '',
].join('\n');

type LogLine = (level: string, message: string, error?: unknown) => void;

/** stdout belongs to the protocol: everything for people goes to stderr, JSON with --json. */
function stderrLogger(json: boolean | undefined): LogLine {
  return (level, message, error) => {
    const detail = error === undefined ? undefined : error instanceof Error ? error.message : String(error);
    process.stderr.write(
      json
        ? `${formatJson({ level, message, ...(detail ? { error: detail } : {}) }, 0)}\n`
        : `toolgate mcp: ${safeText(message, 2000)}${detail ? ` (${safeText(detail, 2000)})` : ''}\n`,
    );
  };
}

/** The flags that need no config, checked before anything is loaded. */
function checkMcpFlags(flags: Pick<McpFlags, 'maxConcurrency' | 'workerWait' | 'tools'>): {
  maxConcurrency: number;
  workerWaitSeconds: number;
  include: string[] | undefined;
} {
  const maxConcurrency = Number(flags.maxConcurrency);
  if (!Number.isInteger(maxConcurrency) || maxConcurrency < 1 || maxConcurrency > 64) {
    throw new ToolgateUsageError('--max-concurrency must be a whole number from 1 to 64.');
  }
  const workerWaitSeconds = Number(flags.workerWait);
  if (!Number.isInteger(workerWaitSeconds) || workerWaitSeconds < 1 || workerWaitSeconds > 86_400) {
    throw new ToolgateUsageError('--worker-wait must be a whole number of seconds from 1 to 86400.');
  }
  const include = flags.tools
    ?.split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  return { maxConcurrency, workerWaitSeconds, include };
}

function checkIncludedTools(include: readonly string[] | undefined, catalog: ToolCatalog): void {
  const unknown = include?.filter((name) => !Object.hasOwn(catalog, name)) ?? [];
  if (unknown.length > 0) {
    throw new ToolgateUsageError(
      `--tools names unknown tools: ${unknown.join(', ')}. Known: ${Object.keys(catalog).join(', ')}.`,
    );
  }
}

/** Serves the tools on stdio until the client closes stdin or a signal stops the server. */
async function serveOnStdio(flags: McpFlags, logLine: LogLine): Promise<void> {
  const { maxConcurrency, workerWaitSeconds, include } = checkMcpFlags(flags);
  const [{ loadCommandConfig }, { openSession }, { serveMcp }, { isNoWorkerError }, { runUntilStopped }] =
    await Promise.all([
      import('../command-config.ts'),
      import('../endpoint.ts'),
      import('../../agent/mcp.ts'),
      import('../../agent/run-tool-calls.ts'),
      import('../stop-signals.ts'),
    ]);
  const config = await loadCommandConfig(flags);
  const { catalog } = config;
  checkIncludedTools(include, catalog);
  const context = callContextOf(flags, `mcp-${currentUser()}`);
  await runUntilStopped({
    what: 'the MCP server',
    start: async (signal) => {
      const session = await openSession(flags, { config });
      try {
        signal.throwIfAborted();
        const server = serveMcp({
          client: session.client,
          catalog: catalog,
          ...(include ? { include } : {}),
          context,
          maxConcurrency,
          approvalMode: flags.waitForApproval ? 'wait' : 'return-pending',
          noWorkerAfterMs: workerWaitSeconds * 1000,
          // serveMcp logs a warning of its own for a call no worker picked up: not an error.
          onError: (error, call) => {
            if (!isNoWorkerError(error)) {
              logLine('error', `toolgate could not run ${call.name}`, error);
            }
          },
          log: (event) => logLine(event.level, event.message, event.error),
        });
        return { session, server };
      } catch (error) {
        await session.close();
        throw error;
      }
    },
    started: ({ session }) =>
      logLine(
        'info',
        `serving ${include?.length ?? Object.keys(catalog).length} tools on stdio as ${context.principal} (tenant ${context.tenant}), Temporal at ${session.endpoint.address}, task queue ${session.endpoint.taskQueue}`,
      ),
    // The client closing stdin ends the server, once the answers in progress are out.
    running: ({ server }) => server.done,
    stop: async ({ server, session }) => {
      await server.close();
      await session.close().catch(() => undefined);
    },
  });
}

export function addMcpCommand(program: Command): void {
  const mcp = withConnectionOptions(
    program
      .command('mcp')
      .description(
        'Serve the tools to an MCP client over stdio: every tools/call goes through the gates. stdout carries protocol messages only; logs go to stderr.',
      )
      .option('--tenant <tenant>', 'tenant the calls run under', 'default')
      .option('--principal <principal>', 'who is asking (default: mcp-<your user name>)')
      .addOption(
        new Option('--principal-kind <kind>', 'human, agent or service')
          .choices(['human', 'agent', 'service'])
          .default('agent'),
      )
      .option('--tools <names>', 'serve only these tools, comma-separated (default: every tool)')
      .option('--max-concurrency <n>', 'tool calls run at once; more wait their turn', '4')
      .option(
        '--wait-for-approval',
        'hold a tools/call until its approval is decided (default: answer at once that it is pending)',
      )
      .option(
        '--worker-wait <seconds>',
        'answer a tools/call as pending once no worker has polled its task queue for this long; the call stays open',
        String(defaultWorkerWaitSeconds),
      ),
  );
  // stdout carries the protocol here, so --json shapes the log on stderr instead.
  const jsonOption = mcp.options.find((option) => option.long === '--json');
  if (jsonOption) jsonOption.description = 'write the log on stderr as JSON lines';
  mcp.addHelpText('after', mcpHelpText).action(async (flags: McpFlags) => {
    const logLine = stderrLogger(flags.json);
    try {
      await serveOnStdio(flags, logLine);
    } catch (error) {
      const { describeCliError } = await import('../errors.ts');
      const { exitCode, message } = describeCliError(error);
      logLine('error', message);
      process.exitCode = exitCode;
    }
  });
}
