import { runCli } from './main.ts';

await runCli(process.argv);
