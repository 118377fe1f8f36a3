/**
 * The agent's credential (issue 13): `--credential` read and refused as the daemon does at start,
 * and what the session says when the master answers its upgrade 401.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAgentCredential, resolveAgentFlags } from '../../agent/config.js';
import { credentialRefusal } from '../../agent/session.js';
import { tempDir } from '../helpers/daemons.js';

test('loadAgentCredential: the three forms, and every refusal names the flag and file, never the secret', (t) => {
  const dir = tempDir(t, 'drydock-agent-credential-');
  const file = (name: string, text: string, mode = 0o600): string => {
    const p = join(dir, name);
    writeFileSync(p, text);
    chmodSync(p, mode);
    return p;
  };
  assert.deepEqual(loadAgentCredential(undefined), { ok: true, credential: undefined });
  const cases: Array<[string, string, number, { ok: true; credential: unknown } | RegExp]> = [
    ['json', '{"principal":"agent-r1","secret":"s3cret"}', 0o600, { ok: true, credential: { kind: 'basic', principal: 'agent-r1', secret: 's3cret' } }],
    ['line', 'agent-r1 s3cret\n', 0o400, { ok: true, credential: { kind: 'basic', principal: 'agent-r1', secret: 's3cret' } }],
    ['token', '{"token":"tok-0123456789abcdef"}', 0o640, { ok: true, credential: { kind: 'bearer', token: 'tok-0123456789abcdef' } }],
    ['readable', '{"principal":"agent-r1","secret":"s3cret"}', 0o644, /^--credential \S+readable is readable by others \(mode 0644\); run chmod 600 on it$/],
    ['group-writable', 'agent-r1 s3cret', 0o660, /^--credential \S+ is writable by its group \(mode 0660\)/],
    ['no-secret', '{"principal":"agent-r1"}', 0o600, /^--credential \S+no-secret: 'secret' must be a non-empty string without spaces$/],
    ['three-fields', 'agent-r1 s3cret extra', 0o600, /^--credential \S+three-fields: expected 'principal secret', got 3 fields$/],
    ['empty', '', 0o600, /^--credential \S+empty: it is empty$/],
    ['not-json', '{"principal":', 0o600, /^--credential \S+not-json: not valid JSON/],
  ];
  for (const [name, text, mode, want] of cases) {
    const got = loadAgentCredential(file(name, text, mode));
    if (want instanceof RegExp) {
      assert.equal(got.ok, false, name);
      if (!got.ok) {
        assert.match(got.error, want, name);
        assert.equal(got.error.includes('s3cret'), false, `${name}: the secret is never repeated`);
      }
    } else assert.deepEqual(got, want, name);
  }
  const missing = loadAgentCredential(join(dir, 'nope'));
  assert.ok(!missing.ok && /^--credential \S+nope cannot be read: no such file$/.test(missing.error));
});

test('--credential is a flag (and DRYDOCK_CREDENTIAL, for systemd units)', () => {
  const flag = resolveAgentFlags(['--master=m:5050', '--credential=/etc/drydock/agent.cred'], {});
  assert.ok(flag.kind === 'ok' && flag.values.credential === '/etc/drydock/agent.cred');
  const env = resolveAgentFlags(['--master=m:5050'], { DRYDOCK_CREDENTIAL: '/run/credentials/drydock-agent.service/agent-credential' });
  assert.ok(env.kind === 'ok' && env.values.credential === '/run/credentials/drydock-agent.service/agent-credential');
  const none = resolveAgentFlags(['--master=m:5050'], {});
  assert.ok(none.kind === 'ok' && none.values.credential === undefined);
});

test('credentialRefusal: a 401 on the upgrade is named, with what to do; other errors are not', () => {
  const cases: Array<[string, boolean, RegExp | undefined]> = [
    ['Unexpected server response: 401', false, /requires agents to authenticate \(--authenticate_agents\): start the agent with --credential=FILE/],
    ['Unexpected server response: 401', true, /does not accept this credential: check that --credential names a principal and secret in the master's --credentials/],
    ['Unexpected server response: 4010', true, undefined],
    ['Unexpected server response: 400', true, undefined],
    ['Unexpected server response: 503', false, undefined],
    ['connect ECONNREFUSED 127.0.0.1:5050', false, undefined],
  ];
  for (const [error, presented, want] of cases) {
    const got = credentialRefusal(error, presented);
    if (want === undefined) assert.equal(got, undefined, error);
    else assert.match(got ?? '', want, error);
  }
});
