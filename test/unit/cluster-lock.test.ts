/**
 * The local cluster's lock (scripts/cluster-lock.ts): the names it binds and the line a second
 * start prints, as tables.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lockName, refusal, type LockSubject } from '../../scripts/cluster-lock.js';

test('lock names: an abstract name per work dir (hashed: any length fits) and per address; distinct subjects, distinct names', () => {
  const long = `/home/${'x'.repeat(300)}/.drydock`;
  const cases: Array<[LockSubject, RegExp]> = [
    [{ kind: 'dir', path: '/home/me/drydock/.drydock' }, /^\0drydock-cluster\/dir\/[0-9a-f]{32}$/],
    [{ kind: 'dir', path: long }, /^\0drydock-cluster\/dir\/[0-9a-f]{32}$/],
    [{ kind: 'address', address: '127.0.0.1:5050' }, /^\0drydock-cluster\/address\/127\.0\.0\.1:5050$/],
    [{ kind: 'address', address: '127.0.0.1:23790' }, /^\0drydock-cluster\/address\/127\.0\.0\.1:23790$/],
  ];
  for (const [subject, shape] of cases) {
    const name = lockName(subject);
    assert.match(name, shape);
    // A Unix socket's path holds 107 bytes and the NUL that makes it abstract.
    assert.ok(Buffer.byteLength(name) <= 107, name);
  }
  assert.equal(lockName({ kind: 'dir', path: '/a/.drydock' }), lockName({ kind: 'dir', path: '/a/.drydock' }));
  assert.notEqual(lockName({ kind: 'dir', path: '/a/.drydock' }), lockName({ kind: 'dir', path: '/b/.drydock' }));
  assert.equal(new Set(cases.map(([s]) => lockName(s))).size, cases.length);
});

test('the refusal says what is held, by which pid, how to stop it, and how to start another one', () => {
  const holder = { pid: 4242, workDir: '/home/me/drydock/.drydock' };
  const cases: Array<[LockSubject, typeof holder | undefined, string, string]> = [
    [
      { kind: 'dir', path: '/home/me/drydock/.drydock' },
      holder,
      '/home/me/drydock/.drydock',
      'cluster: a local cluster already runs in /home/me/drydock/.drydock (pid 4242, work dir /home/me/drydock/.drydock). Nothing was started.\n' +
        'Stop it with Ctrl-C in its terminal or: kill 4242; or start another one with --work_dir=DIR and other ports (--port, --agent_port).',
    ],
    [
      { kind: 'address', address: '127.0.0.1:5050' },
      holder,
      '/elsewhere',
      'cluster: a local cluster already serves 127.0.0.1:5050 (pid 4242, work dir /home/me/drydock/.drydock). Nothing was started.\n' +
        'Stop it with Ctrl-C in its terminal or: kill 4242; or start this one with another --port.',
    ],
    [
      { kind: 'dir', path: '/w' },
      undefined,
      '/w',
      'cluster: a local cluster already runs in /w (it did not say its pid; see /w/cluster.pid). Nothing was started.',
    ],
  ];
  for (const [subject, h, workDir, line] of cases) assert.equal(refusal(subject, h, workDir), line);
});
