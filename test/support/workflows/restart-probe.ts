/** A trivial workflow whose result must survive a dev server crash and restart. */
export async function restartProbe(input: string): Promise<string> {
  return `probe:${input}`;
}
