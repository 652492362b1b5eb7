/**
 * How approver names compare: Unicode-normalised (NFKC), trimmed, and without case, so `Alice`,
 * ` alice` and `ＡＬＩＣＥ` are one approver.
 */
export function normalizeName(name: string): string {
  return name.normalize('NFKC').trim().toLowerCase();
}
