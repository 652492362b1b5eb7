import { describe, expect, it } from 'vitest';
import { anthropicToolResultMessage } from '../../../src/agent/anthropic.ts';
import { modelResultForRecord, scrubForModel } from '../../../src/agent/model-messages.ts';
import { type ReasonCode, reasonCodes } from '../../../src/contracts/reason-codes.ts';
import { createRecord } from './fake-client.ts';

/** A message a careless tool might raise: a stack, internal paths, hosts and addresses. */
const leakyMessage = [
  'Error: connect ECONNREFUSED 10.20.30.40:5432 while calling https://payments.internal.example.com/v1/transfer',
  '    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)',
  '    at Client.connect (/srv/toolgate/node_modules/pg/lib/client.js:132:9)',
  'config at /etc/toolgate/secrets.json, fallback C:\\Users\\ops\\toolgate.ini, replica db-2.prod.svc:6432,',
  'cache on localhost and ledger-1.corp, v6 fe80::1:2:3:4',
].join('\n');

const stackPattern = /\bat\s+\S+.*\(?[^\s()]*:\d+:\d+\)?|node:net/;
const pathPattern = /(^|[\s'"(=])\/(srv|etc|usr|home|var|tmp)\b|[A-Za-z]:\\/;
const hostPattern =
  /https?:\/\/|\b\d{1,3}(\.\d{1,3}){3}\b|localhost|\.internal\b|\.corp\b|\.svc\b|[a-z0-9-]+\.[a-z]+:\d{2,5}|fe80::/i;

describe.each(Object.keys(reasonCodes) as ReasonCode[])('reason code %s', (reason) => {
  const status = reason === 'TIMEOUT' ? 'timeout' : reason === 'CANCELLED' ? 'cancelled' : 'denied';

  it('maps to an is_error result that says whether retrying helps and what to do next', () => {
    const result = modelResultForRecord(createRecord({ status, reason }));
    expect(result.isError).toBe(true);
    expect(result.text).toContain(`Error ${reason}:`);
    expect(result.text).toContain(reasonCodes[reason].meaning);
    expect(result.text).toContain(reasonCodes[reason].nextStep);
    expect(result.text).toContain(
      reasonCodes[reason].retryable ? 'Retrying the same call may help.' : 'will not help',
    );
    const message = anthropicToolResultMessage([{ id: 'toolu_1' }], [{ id: 'toolu_1', ...result }]);
    expect(message.content[0]).toMatchObject({ type: 'tool_result', tool_use_id: 'toolu_1', is_error: true });
  });

  it('never carries a stack, a path or a host, even when the tool message had them', () => {
    const result = modelResultForRecord(createRecord({ status, reason, message: leakyMessage }));
    expect(result.isError).toBe(true);
    expect(result.text).toContain(`Error ${reason}:`);
    expect(result.text).not.toMatch(stackPattern);
    expect(result.text).not.toMatch(pathPattern);
    expect(result.text).not.toMatch(hostPattern);
  });
});

describe('scrubForModel', () => {
  it('keeps ordinary guidance intact', () => {
    const text =
      'path: Path refused: the path contains an empty part (// or a trailing /). Use q3/summary.md.';
    expect(scrubForModel(text)).toBe(text);
  });

  it('removes public and partly internal host names, and the host a network error names', () => {
    const scrubbed = scrubForModel(
      'getaddrinfo ENOTFOUND db-primary.prod.acme.com; vault.corp.acme.io said no; getaddrinfo EAI_AGAIN billing-db',
    );
    expect(scrubbed).toBe(
      'getaddrinfo ENOTFOUND [host removed]; [host removed] said no; getaddrinfo EAI_AGAIN [host removed]',
    );
    // Ordinary dotted words stay.
    const plain = 'See README.md and example.com, version 1.2.3, e.g. report.v2.json.';
    expect(scrubForModel(plain)).toBe(plain);
  });

  it('mentions the retry-after time for RATE_LIMITED', () => {
    const result = modelResultForRecord(
      createRecord({ status: 'denied', reason: 'RATE_LIMITED', retryAfterSeconds: 2.5 }),
    );
    expect(result.text).toContain('Wait at least 3 seconds.');
  });
});
