/**
 * The master's maintenance hooks, pure: the hooks file (accepted forms, every refusal naming its
 * path), placeholders filled into argv with unsafe values refused, the minimal environment, the
 * file's mode and owner, the hook user decision, and the passwd parser.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  decideHookUser,
  fillHookArgv,
  hookEnvironment,
  hookPlaceholders,
  hooksFileProblem,
  parseHooksFile,
  HOOK_PATH,
  type FileFacts,
} from '../../master/plans/hooks.js';
import { findUser, parsePasswd, type PasswdEntry } from '../../io/passwd.js';

test('a hooks file reads into argv, timeout and env; YAML or JSON', () => {
  const r = parseHooksFile([
    'hooks:',
    '  patch:',
    '    command: ["/usr/local/sbin/patch-host", "{hostname}", "{ip}"]   # argv, no shell',
    '    timeout: 10mins',
    '    env: { PATCH_CHANNEL: stable, RETRIES: 3 }',
    '  reboot:',
    '    command: ["/usr/bin/systemctl", "--host", "root@{ip}", "reboot"]',
    '  shell_ok:',
    '    command: ["/bin/sh", "-c", "echo ${HOME} {hostname}; awk \'{print $1}\' f"]',
    '',
  ].join('\n'));
  assert.ok(r.ok, r.ok ? '' : r.errors.join('\n'));
  assert.deepEqual([...r.hooks.values()], [
    { name: 'patch', argv: ['/usr/local/sbin/patch-host', '{hostname}', '{ip}'], timeoutMs: 600_000, env: { PATCH_CHANNEL: 'stable', RETRIES: '3' } },
    { name: 'reboot', argv: ['/usr/bin/systemctl', '--host', 'root@{ip}', 'reboot'], timeoutMs: 900_000, env: {} },
    { name: 'shell_ok', argv: ['/bin/sh', '-c', "echo ${HOME} {hostname}; awk '{print $1}' f"], timeoutMs: 900_000, env: {} },
  ]);
  assert.ok(Object.isFrozen(r.hooks.get('patch')) && Object.isFrozen(r.hooks.get('patch')?.argv), 'frozen');
  const json = parseHooksFile(JSON.stringify({ hooks: { patch: { command: ['/bin/echo', 'patching', '{hostname}'], timeout: '1mins' } } }));
  assert.ok(json.ok && json.hooks.get('patch')?.timeoutMs === 60_000);
  const none = parseHooksFile('hooks: {}\n');
  assert.ok(none.ok && none.hooks.size === 0, 'an empty list is a list');
});

test('each refusal of a hooks file names the path and what it got', () => {
  const cases: Array<[string, string, string]> = [
    ['not a mapping', '- a\n', 'the hooks file must be a mapping with hooks: {NAME: {command: [...]}}, got a list'],
    ['no hooks key', 'hook: {}\n', 'hook is not a known key; did you mean hooks?'],
    ['hooks missing', '{}\n', 'hooks is required'],
    ['hooks a list', 'hooks: [a]\n', 'hooks must be a mapping of names to hooks, got a list'],
    ['bad name', 'hooks: { Patch: { command: ["/bin/true"] } }\n', "hooks.Patch: a hook's name is a lowercase letter"],
    ['hook not a mapping', 'hooks: { patch: "/bin/true" }\n', 'hooks.patch must be a mapping with command (and timeout, env), got "/bin/true"'],
    ['command missing', 'hooks: { patch: { timeout: 1mins } }\n', 'hooks.patch.command is required'],
    ['command a string: no shell', 'hooks: { patch: { command: "/bin/true {hostname}" } }\n', 'hooks.patch.command must be a list of 1 to 256 strings (the program, then its arguments; no shell), got "/bin/true {hostname}"'],
    ['command empty', 'hooks: { patch: { command: [] } }\n', 'hooks.patch.command must be a list of 1 to 256 strings (the program, then its arguments; no shell), got 0 items'],
    ['relative program', 'hooks: { patch: { command: ["patch-host"] } }\n', 'hooks.patch.command[0] must be the program\'s absolute path (e.g. /usr/local/sbin/patch-host), without placeholders, got "patch-host"'],
    ['placeholder in the program', 'hooks: { patch: { command: ["/opt/{hostname}/x"] } }\n', 'hooks.patch.command[0] must be the program\'s absolute path'],
    ['unknown placeholder', 'hooks: { patch: { command: ["/bin/x", "{host}"] } }\n', 'hooks.patch.command[1] uses {host}: the placeholders are {hostname}, {ip}, {agent_id}'],
    ['argument a list', 'hooks: { patch: { command: ["/bin/x", [a]] } }\n', 'hooks.patch.command[1] must be a string, got a list'],
    ['timeout zero', 'hooks: { patch: { command: ["/bin/x"], timeout: 0secs } }\n', 'hooks.patch.timeout must be a duration longer than 0'],
    ['timeout a number', 'hooks: { patch: { command: ["/bin/x"], timeout: 600 } }\n', 'hooks.patch.timeout must be a duration longer than 0 in whole milliseconds, such as 10mins or 30secs, got 600'],
    ['unknown key', 'hooks: { patch: { command: ["/bin/x"], args: [] } }\n', 'hooks.patch.args is not a known key'],
    ['env a list', 'hooks: { patch: { command: ["/bin/x"], env: [A] } }\n', 'hooks.patch.env must be a mapping of variable names to values, got a list'],
    ['env bad name', 'hooks: { patch: { command: ["/bin/x"], env: { "A-B": 1 } } }\n', 'hooks.patch.env.A-B is not a variable name'],
    ['env sets a Drydock variable', 'hooks: { patch: { command: ["/bin/x"], env: { DRYDOCK_HOSTNAME: x } } }\n', 'hooks.patch.env.DRYDOCK_HOSTNAME: Drydock sets DRYDOCK_HOSTNAME for every hook'],
    ['env value a mapping', 'hooks: { patch: { command: ["/bin/x"], env: { A: { b: 1 } } } }\n', 'hooks.patch.env.A must be text'],
    ['duplicate hook', 'hooks:\n  a: { command: ["/bin/x"] }\n  a: { command: ["/bin/y"] }\n', 'line 3, column 3: key "a" appears twice in one mapping'],
  ];
  for (const [name, text, want] of cases) {
    const r = parseHooksFile(text);
    assert.equal(r.ok, false, name);
    if (!r.ok) assert.ok(r.errors.some((e) => e.startsWith(want)), `${name}: wanted "${want}", got:\n${r.errors.join('\n')}`);
  }
  assert.equal(parseHooksFile(42 as unknown as string).ok, false, 'never throws');
});

test('placeholders are filled into argv elements; unsafe values and option-like values are refused', () => {
  assert.deepEqual(hookPlaceholders('a {hostname} ${HOME} {ip}{agent_id} {x y}'), ['hostname', 'ip', 'agent_id']);
  const values = { hostname: 'agent-3', ip: '10.0.0.3', agent_id: 'S1,S2' };
  const cases: Array<[string, string[], Partial<typeof values>, string[] | RegExp]> = [
    ['all three', ['/bin/reboot', '{hostname}', '{ip}', '{agent_id}'], {}, ['/bin/reboot', 'agent-3', '10.0.0.3', 'S1,S2']],
    ['inside an element, repeated', ['/bin/x', 'root@{ip}', '{hostname}:{hostname}'], {}, ['/bin/x', 'root@10.0.0.3', 'agent-3:agent-3']],
    ['shell variables untouched', ['/bin/sh', '-c', 'echo ${HOSTNAME} {hostname}'], {}, ['/bin/sh', '-c', 'echo ${HOSTNAME} agent-3']],
    ['no agent: empty', ['/bin/x', '{agent_id}'], { agent_id: '' }, ['/bin/x', '']],
    ['hostile hostname', ['/bin/x', '{hostname}'], { hostname: 'a;rm -rf /' }, /its hostname "a;rm -rf \/" holds characters that are not safe in a hook's argument/],
    ['hostile hostname, $()', ['/bin/sh', '-c', 'ping {hostname}'], { hostname: '$(id)' }, /holds characters that are not safe/],
    ['an option for a hostname', ['/usr/bin/ssh', '{hostname}', 'reboot'], { hostname: '-v' }, /its hostname "-v" starts with '-', which the hook's program would read as an option/],
    ['hostile hostname unused', ['/bin/sh', '-c', 'x "$DRYDOCK_HOSTNAME"'], { hostname: 'a;rm -rf /' }, ['/bin/sh', '-c', 'x "$DRYDOCK_HOSTNAME"']],
  ];
  for (const [name, argv, over, want] of cases) {
    const r = fillHookArgv(argv, { ...values, ...over });
    if (Array.isArray(want)) assert.deepEqual(r, { ok: true, argv: want }, name);
    else {
      assert.equal(r.ok, false, name);
      if (!r.ok) assert.match(r.error, want, name);
    }
  }
});

test('the environment is minimal: PATH, LANG, HOME, the hook\'s own, then Drydock\'s, which nothing overrides', () => {
  const env = hookEnvironment({
    home: '/var/lib/hooks',
    hookEnv: { PATCH_CHANNEL: 'stable', PATH: '/opt/bin' },
    plan: 'kernel',
    step: 'r1/agent-3',
    values: { hostname: 'agent-3', ip: '10.0.0.3', agent_id: 'S1' },
  });
  assert.deepEqual(env, {
    PATH: '/opt/bin', // the operator's file may set PATH: their decision
    LANG: 'C.UTF-8',
    HOME: '/var/lib/hooks',
    PATCH_CHANNEL: 'stable',
    DRYDOCK_PLAN: 'kernel',
    DRYDOCK_STEP: 'r1/agent-3',
    DRYDOCK_HOSTNAME: 'agent-3',
    DRYDOCK_IP: '10.0.0.3',
    DRYDOCK_AGENT_ID: 'S1',
  });
  const plain = hookEnvironment({ home: '/', hookEnv: {}, plan: 'p', step: 's', values: { hostname: '', ip: '', agent_id: '' } });
  assert.equal(plain['PATH'], HOOK_PATH);
  assert.equal(HOOK_PATH, '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin');
  // Nothing of this process's environment comes along.
  process.env['DRYDOCK_TEST_SECRET'] = 'leak';
  try {
    const again = hookEnvironment({ home: '/', hookEnv: {}, plan: 'p', step: 's', values: { hostname: '', ip: '', agent_id: '' } });
    assert.deepEqual(Object.keys(again).sort(), ['DRYDOCK_AGENT_ID', 'DRYDOCK_HOSTNAME', 'DRYDOCK_IP', 'DRYDOCK_PLAN', 'DRYDOCK_STEP', 'HOME', 'LANG', 'PATH']);
  } finally {
    delete process.env['DRYDOCK_TEST_SECRET'];
  }
});

test('the hooks file must not be writable by its group or others, and must be root\'s or the master\'s', () => {
  const f = (mode: number, uid = 0, over: Partial<FileFacts> = {}): FileFacts => ({ isFile: true, mode: 0o100000 | mode, uid, size: 100, ...over });
  const cases: Array<[string, FileFacts, number, string | undefined]> = [
    ['root 0644', f(0o644), 0, undefined],
    ['root 0600, master not root', f(0o600), 1000, undefined],
    ['the master\'s own 0640', f(0o640, 1000), 1000, undefined],
    ['writable by others', f(0o646), 0, 'is writable by others (mode 0646), who could then run any command as the hook user; run chmod go-w on it'],
    ['writable by its group', f(0o664), 0, 'is writable by its group (mode 0664), who could then run any command as the hook user; run chmod go-w on it'],
    ['writable by both', f(0o666), 0, 'is writable by its group and others (mode 0666)'],
    ['another user\'s', f(0o644, 1001), 1000, 'is owned by uid 1001, neither root nor the master\'s user (uid 1000)'],
    ['a directory', f(0o755, 0, { isFile: false }), 0, 'is not a regular file'],
    ['too large', f(0o644, 0, { size: 2 * 1024 * 1024 }), 0, 'is 2097152 bytes, more than 1048576'],
  ];
  for (const [name, facts, masterUid, want] of cases) {
    const got = hooksFileProblem(facts, masterUid);
    if (want === undefined) assert.equal(got, undefined, name);
    else assert.ok(got?.startsWith(want), `${name}: ${got}`);
  }
});

const PASSWD = [
  'root:x:0:0:root:/root:/bin/bash',
  '# a comment',
  '',
  'daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin',
  'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin',
  'hooks:x:998:997:Drydock hooks:/var/lib/hooks:/usr/sbin/nologin',
  '1234:x:4321:4321::/home/digits:/bin/sh',
  'broken:x:abc:1::/:/bin/sh',
  'short:x:5',
  '+nis-entry::::::',
  'crlf:x:77:77::/home/crlf:/bin/sh\r',
].join('\n');

test('passwd: entries parsed, junk lines skipped; found by name, or by uid', () => {
  const entries = parsePasswd(PASSWD);
  assert.deepEqual(entries.map((e) => [e.name, e.uid, e.gid, e.home]), [
    ['root', 0, 0, '/root'],
    ['daemon', 1, 1, '/usr/sbin'],
    ['nobody', 65534, 65534, '/nonexistent'],
    ['hooks', 998, 997, '/var/lib/hooks'],
    ['1234', 4321, 4321, '/home/digits'],
    ['crlf', 77, 77, '/home/crlf'],
  ]);
  assert.equal(findUser(entries, 'hooks')?.uid, 998);
  assert.equal(findUser(entries, 998)?.name, 'hooks');
  assert.equal(findUser(entries, '65534')?.name, 'nobody', 'a uid given as text');
  assert.equal(findUser(entries, '1234')?.uid, 4321, 'a name made of digits wins over a uid');
  assert.equal(findUser(entries, 'ghost'), undefined);
});

test('the hook user: required for a root master, root allowed explicitly, another user refused for a non-root master', () => {
  const entries = parsePasswd(PASSWD);
  const find = (who: string | number): PasswdEntry | undefined => findUser(entries, who);
  const cases: Array<[string, string | undefined, number, unknown]> = [
    ['root master without --hook_user', undefined, 0, /^--maintenance_hooks: the master runs as root, so --hook_user=NAME is required/],
    ['root master, --hook_user=root', 'root', 0, { name: 'root', uid: 0, gid: 0, home: '/root' }],
    ['root master, --hook_user=hooks', 'hooks', 0, { name: 'hooks', uid: 998, gid: 997, home: '/var/lib/hooks' }],
    ['root master, unknown user', 'ghost', 0, /^--hook_user=ghost: no such user/],
    ['non-root master, itself by default', undefined, 998, { name: 'hooks', uid: undefined, gid: undefined, home: '/var/lib/hooks' }],
    ['non-root master not in passwd', undefined, 5555, { name: '5555', uid: undefined, gid: undefined, home: '/' }],
    ['non-root master naming itself', 'hooks', 998, { name: 'hooks', uid: undefined, gid: undefined, home: '/var/lib/hooks' }],
    ['non-root master naming another user', 'root', 998, /^--hook_user=root: a master that is not root runs hooks as its own user only \(it runs as uid 998, hooks\)/],
  ];
  for (const [name, hookUser, uid, want] of cases) {
    const r = decideHookUser(hookUser, uid, find);
    if (want instanceof RegExp) {
      assert.equal(r.ok, false, name);
      if (!r.ok) assert.match(r.error, want, name);
    } else assert.deepEqual(r, { ok: true, user: want }, name);
  }
});
