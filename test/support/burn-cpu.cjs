'use strict';
/**
 * Busy work measured by the calling thread's own CPU time (its /proc/thread-self/stat), so a busy
 * machine makes it take longer but cannot make it use less. Plain CommonJS, so that a test and a
 * worker thread started with `eval` both load this one copy.
 */
const { readFileSync } = require('node:fs');

/** CPU time of the calling thread, in ms (100 ticks a second). */
function ownCpuMs() {
  const stat = readFileSync('/proc/thread-self/stat', 'utf8');
  // The command name may hold spaces, so count fields from the closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Runs until this thread has used `ms` of CPU (20 s of wall time at most). */
function burnOwnCpu(ms) {
  const start = ownCpuMs();
  const deadline = Date.now() + 20_000;
  while (ownCpuMs() - start < ms && Date.now() < deadline) for (let index = 0; index < 1e5; index++);
}

module.exports = { burnOwnCpu };
