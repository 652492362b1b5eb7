import { runCli } from './main.ts';

// `toolgate --help | head` closes stdout early: that is the reader's choice, not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});

await runCli(process.argv);
