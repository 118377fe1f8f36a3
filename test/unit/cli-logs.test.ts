/**
 * `drydock task logs`' pure part (cli/logs.ts) and its shell over fakes (cli/logs-command.ts):
 * which task an argument names, where the last N lines begin when a file is read backwards in
 * chunks (lines cut across reads), the sandbox path, and -f over a file that grows, across
 * reads, until the task ends.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TailScan, findTask, parseTailLines, sandboxFilePath, taskRefs } from '../../cli/logs.js';
import { taskLogs, type AgentRead, type AgentReader } from '../../cli/logs-command.js';
import type { MasterClient } from '../../cli/client.js';
import type { TerminalIo } from '../../cli/terminal.js';
import { ANONYMOUS_ACCESS } from '../../io/client-auth.js';

/** Where the last `n` lines of `text` begin, read backwards in chunks of `chunk` bytes. */
function tailOf(text: string | Buffer, n: number, chunk: number): string {
  const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text);
  const scan = new TailScan(bytes.length, n);
  for (let end = bytes.length; scan.start === undefined && end > 0;) {
    const at = Math.max(0, end - chunk);
    scan.feed(bytes.subarray(at, end), at);
    end = at;
  }
  return bytes.subarray(scan.start ?? 0).toString('latin1');
}

test('TailScan: the last N lines, whatever the chunk size cuts', () => {
  const cases: Array<[string, number, string]> = [
    ['a\nb\nc\n', 1, 'c\n'],
    ['a\nb\nc\n', 2, 'b\nc\n'],
    ['a\nb\nc\n', 3, 'a\nb\nc\n'],
    ['a\nb\nc\n', 10, 'a\nb\nc\n'],
    ['a\nb\nc', 1, 'c'],
    ['a\nb\nc', 2, 'b\nc'],
    ['a\nb\nc\n', 0, ''],
    ['', 3, ''],
    ['\n', 1, '\n'],
    ['\n\n\n', 2, '\n\n'],
    ['only one line, no newline', 1, 'only one line, no newline'],
    ['long line number one\nshort\n', 1, 'short\n'],
  ];
  for (const [text, n, want] of cases) {
    for (const chunk of [1, 2, 3, 7, 64 * 1024]) assert.equal(tailOf(text, n, chunk), want, `${JSON.stringify(text)} tail ${n} in chunks of ${chunk}`);
  }
  // Bytes that are not UTF-8 pass through: only 0x0a ends a line.
  const binary = Buffer.from([0xff, 0xfe, 0x0a, 0xc3, 0x0a, 0x80, 0x0a]);
  assert.deepEqual(Buffer.from(tailOf(binary, 2, 2), 'latin1'), Buffer.from([0xc3, 0x0a, 0x80, 0x0a]));
});

test('TailScan: found without reading the rest of the file', () => {
  const text = Buffer.from('x'.repeat(1000) + '\nlast\n');
  const scan = new TailScan(text.length, 1);
  assert.equal(scan.feed(text.subarray(text.length - 6), text.length - 6), text.length - 5);
});

test('--tail: a count of lines', () => {
  assert.deepEqual(parseTailLines(undefined), { ok: true, value: undefined });
  assert.deepEqual(parseTailLines('20'), { ok: true, value: 20 });
  assert.deepEqual(parseTailLines('0'), { ok: true, value: 0 });
  for (const bad of ['-1', 'ten', '1.5', '']) assert.equal(parseTailLines(bad).ok, false, bad);
});

const ref = (taskId: string, name: string, state: string, frameworkId = 'F0'): { task_id: { value: string }; name: string; state: string; framework_id: { value: string }; agent_id: { value: string } } => ({
  task_id: { value: taskId }, name, state, framework_id: { value: frameworkId }, agent_id: { value: 'M-S0' },
});

test('findTask: an id, a unique prefix, a name; ambiguity lists the tasks', () => {
  const refs = taskRefs({
    tasks: [ref('web-1a2b', 'web', 'TASK_RUNNING'), ref('job-9', 'job', 'TASK_RUNNING', 'F1')],
    completed_tasks: [ref('web-77aa', 'web', 'TASK_FINISHED'), ref('job-9', 'job', 'TASK_FINISHED', 'F0'), ref('web-1a2b', 'web', 'TASK_KILLED')],
  });
  // The completed copy of a live task is left out.
  assert.equal(refs.filter((r) => r.taskId === 'web-1a2b').length, 1);
  const pick = (arg: string, framework?: string): string => {
    const r = findTask(arg, refs, framework);
    return r.ok ? `${r.value.taskId}@${r.value.frameworkId}` : `error: ${r.error}`;
  };
  assert.equal(pick('web-77aa'), 'web-77aa@F0');
  assert.equal(pick('web-1'), 'web-1a2b@F0');
  assert.equal(pick('web'), 'web-1a2b@F0', 'a reused name: the one live run');
  assert.match(pick('web-'), /^error: 'web-' names 2 tasks by id prefix \(give its task id\):\n {2}web-1a2b {2}TASK_RUNNING {2}framework F0\n {2}web-77aa {2}TASK_FINISHED {2}framework F0$/);
  assert.match(pick('job-9'), /^error: 'job-9' names 2 tasks by id \(give --framework\)/);
  assert.equal(pick('job-9', 'F0'), 'job-9@F0');
  assert.equal(pick('nope'), "error: no task 'nope' is known to the master (drydock tasks --all lists them)");
  assert.equal(pick('web-77aa', 'F1'), "error: no task 'web-77aa' of framework F1 is known to the master (drydock tasks --all lists them)");
});

test('the sandbox path, as Mesos attaches an executor\'s latest run', () => {
  assert.equal(sandboxFilePath({ frameworkId: 'F0', taskId: 't-1' }, 'stderr'), '/frameworks/F0/executors/t-1/runs/latest/stderr');
});

/** A master that knows one task, whose state `states` gives call by call (the last one repeats). */
function fakeMaster(states: string[]): MasterClient {
  let calls = 0;
  return {
    credential: undefined,
    call: async () => {
      const state = states[Math.min(calls++, states.length - 1)] ?? 'TASK_RUNNING';
      return { get_tasks: { tasks: [ref('t-1', 't', state)] } };
    },
    getJson: async () => ({ agent_id: { value: 'M-S0' }, hostname: 'agent-1', ip: '127.0.0.2', port: 5051, state: 'ACTIVE' }),
  } as unknown as MasterClient;
}

/** A clock that moves only when the command sleeps, and a terminal that keeps the lines. */
function fakeIo(): TerminalIo & { errs: string[] } {
  let now = 0;
  const errs: string[] = [];
  return {
    errs,
    out: () => undefined,
    err: (l) => void errs.push(l),
    nowMs: () => now,
    sleep: async (ms) => {
      now += ms;
    },
    onSignal: () => () => undefined,
  };
}

test('-f: what the file gains is printed as it comes, cut anywhere, and the command ends once the task has ended', async () => {
  // The file grows between reads; the task ends after the third state check.
  const grows = ['one\ntw', 'o\nth', '', 'ree\n', '', 'four\n'];
  let file = Buffer.alloc(0);
  let reads = 0;
  const reader: AgentReader = {
    where: 'agent-1 at 127.0.0.2:5051',
    read: async (_path, offset, length): Promise<AgentRead> => {
      const more = grows[reads++];
      if (more !== undefined) file = Buffer.concat([file, Buffer.from(more)]);
      return { kind: 'data', size: file.length, data: file.subarray(offset, offset + length) };
    },
  };
  const got: Buffer[] = [];
  const io = fakeIo();
  const code = await taskLogs(fakeMaster(['TASK_RUNNING', 'TASK_RUNNING', 'TASK_RUNNING', 'TASK_FINISHED']), 't-1', { follow: true }, ANONYMOUS_ACCESS, 'http', {
    io,
    reader: () => reader,
    sink: { write: async (b) => void got.push(Buffer.from(b)) },
  });
  assert.equal(code, 0, io.errs.join('\n'));
  assert.equal(Buffer.concat(got).toString(), 'one\ntwo\nthree\nfour\n');
});

test('refusals: 403 names access_sandboxes (exit 4), 401 (3), 404 of an ended task (1); --timeout without -f is a usage error', async () => {
  for (const [status, body, code, line] of [
    [403, "Forbidden: an anonymous caller may not access_sandboxes on 'root'", 4, /refused to serve the sandbox: Forbidden: an anonymous caller may not access_sandboxes on 'root' \(the agent's ACLs: access_sandboxes and view_tasks/],
    [401, '', 3, /wants credentials \(401\)/],
    [404, "Failed to find 'x'", 1, /does not serve the sandbox of task t-1/],
  ] as const) {
    const io = fakeIo();
    const reader: AgentReader = { where: 'agent-1', read: async () => ({ kind: 'refused', status, body }) };
    assert.equal(await taskLogs(fakeMaster(['TASK_FINISHED']), 't-1', {}, ANONYMOUS_ACCESS, 'http', { io, reader: () => reader, sink: { write: async () => undefined } }), code);
    assert.match(io.errs.join('\n'), line);
  }
  const io = fakeIo();
  assert.equal(await taskLogs(fakeMaster(['TASK_RUNNING']), 't-1', { timeout: '1secs' }, ANONYMOUS_ACCESS, 'http', { io }), 2);
  assert.deepEqual(io.errs, ['--timeout is for --follow: without it nothing waits']);
});



test('-f: Ctrl-C stops following with 130, the task goes on; --timeout with 124', async () => {
  const reader: AgentReader = { where: 'agent-1', read: async () => ({ kind: 'data', size: 3, data: Buffer.alloc(0) }) };
  // Ctrl-C on the third sleep.
  let handler: ((sig: NodeJS.Signals) => void) | undefined;
  let sleeps = 0;
  const io = { ...fakeIo(), onSignal: (h: (sig: NodeJS.Signals) => void) => ((handler = h), () => undefined) };
  const base = io.sleep;
  io.sleep = async (ms: number) => {
    if (++sleeps === 3) handler?.('SIGINT');
    await base(ms);
  };
  assert.equal(await taskLogs(fakeMaster(['TASK_RUNNING']), 't-1', { follow: true }, ANONYMOUS_ACCESS, 'http', { io, reader: () => reader, sink: { write: async () => undefined } }), 130);
  assert.deepEqual(io.errs, ['stopped following task t-1; the task goes on']);

  // --timeout: the clock moves past it while nothing comes.
  const timed = fakeIo();
  let expire: (() => void) | undefined;
  const sleep = timed.sleep;
  timed.sleep = async (ms: number, signal?: AbortSignal) => {
    if (ms === 2_000) return new Promise<void>((r) => (expire = r, signal?.addEventListener('abort', () => r())));
    await sleep(ms);
    if (timed.nowMs() >= 2_000) expire?.();
  };
  assert.equal(await taskLogs(fakeMaster(['TASK_RUNNING']), 't-1', { follow: true, timeout: '2secs' }, ANONYMOUS_ACCESS, 'http', { io: timed, reader: () => reader, sink: { write: async () => undefined } }), 124);
  assert.deepEqual(timed.errs, ['stopped following after 2s (--timeout); the task goes on']);
});
