import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { launcherPath } from '../../agent/launcher.js';
import { encodeSignalLine, MAX_LINE_SIGNALS, Signaller } from '../../agent/signaller.js';
import { LineBuffer } from '../../shared/lines.js';
import { Logger } from '../../shared/log.js';
import { alive, eventually, EVENT_DEADLINE_MS } from '../helpers/daemons.js';

/** A `sleep` in a process group of its own (a task's group, as the launcher makes it), stopped by its pid after the test. */
function group(t: { after(fn: () => void): void }): ChildProcess {
  const c = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
  t.after(() => {
    try {
      process.kill(-(c.pid ?? 0), 'SIGKILL');
    } catch {
      // Already gone.
    }
  });
  return c;
}

function ended(c: ChildProcess): Promise<NodeJS.Signals | null> {
  if (c.exitCode !== null || c.signalCode !== null) return Promise.resolve(c.signalCode);
  return once(c, 'exit').then(([, signal]) => signal as NodeJS.Signals | null);
}

/** The agent's Signaller, started, once its helper runs real-time; closed after the test. */
async function realtimeSignaller(t: { after(fn: () => void): void }, sink: (line: string) => void = () => {}): Promise<Signaller> {
  const s = new Signaller(new Logger({ sink }));
  t.after(() => s.close());
  s.start();
  await eventually(() => (s.realtime ? true : undefined), undefined, 20, 'the signaller running real-time');
  return s;
}

/** `drydock-launch --signal`, its reply lines, stopped by its pid after the test. */
function signaller(t: { after(fn: () => void): void }): { child: ChildProcess; next: () => Promise<string> } {
  const child = spawn(launcherPath(), ['--signal'], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const lines: string[] = [];
  let wake: (() => void) | undefined;
  const buffer = new LineBuffer();
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    lines.push(...buffer.push(chunk));
    wake?.();
  });
  const next = async (): Promise<string> => {
    for (let i = 0; i < EVENT_DEADLINE_MS / 100 && lines.length === 0; i++) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 100);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    const line = lines.shift();
    if (line === undefined) throw new Error(`the signaller said nothing for ${EVENT_DEADLINE_MS} ms`);
    return line;
  };
  return { child, next };
}

/** The scheduling policy of a process (field 41 of /proc/PID/stat): 0 SCHED_OTHER, 1 SCHED_FIFO. */
function policy(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38]);
}

const root = process.getuid?.() === 0;

test('encodeSignalLine: signal numbers and groups in order, one line', () => {
  assert.equal(encodeSignalLine([{ pgid: 4321, signal: 'SIGTERM' }, { pgid: 4321, signal: 'SIGKILL' }, { pgid: 77, signal: 'SIGTERM' }]), '15 4321 9 4321 15 77\n');
});

test('the signaller runs SCHED_FIFO when it may, and signals the groups of a line in order', async (t) => {
  const s = signaller(t);
  const ready = await s.next();
  if (root) {
    // Root has CAP_SYS_NICE: the class is what the whole point rests on.
    assert.equal(ready, 'R fifo');
    assert.equal(policy(s.child.pid ?? 0), 1);
  } else {
    assert.match(ready, /^R (fifo|other .+)$/);
  }
  const a = group(t);
  const b = group(t);
  await Promise.all([once(a, 'spawn'), once(b, 'spawn')]);
  s.child.stdin?.write(`15 ${a.pid} 9 ${b.pid}\n`);
  assert.equal(await s.next(), 'D');
  assert.equal(await ended(a), 'SIGTERM');
  assert.equal(await ended(b), 'SIGKILL');
  // A group already gone is not an error: its task ended first.
  s.child.stdin?.write(`15 ${a.pid}\n`);
  assert.equal(await s.next(), 'D');
  s.child.stdin?.end();
  const [code] = (await once(s.child, 'exit')) as [number | null];
  assert.equal(code, 0);
});

test('the signaller refuses a malformed line whole, and goes on', async (t) => {
  const s = signaller(t);
  assert.match(await s.next(), /^R /);
  const a = group(t);
  await once(a, 'spawn');
  const ownGroup = Number(readFileSync('/proc/self/stat', 'utf8').split(') ')[1]?.split(' ')[2]);
  const cases: Array<[string, RegExp]> = [
    ['abc', /^X bad signal number$/],
    [`15 ${a.pid} 99 ${a.pid}`, /^X bad signal number$/],
    [`15 ${a.pid} 15`, /^X a signal without a process group$/],
    ['15 1', /^X bad process group$/],
    ['15 0', /^X bad process group$/],
    ['15 -5', /^X bad process group$/],
    [`15 ${a.pid}x`, /^X bad process group$/],
    [`15 ${ownGroup}`, /^X refusing to signal the signaller's own group$/],
    ['', /^X empty line$/],
    [`15 ${a.pid} `.repeat(5000), /^X too many signals in one line$/],
    ['9'.repeat(70_000), /^X line longer than 65536 bytes$/],
  ];
  for (const [line, reply] of cases) {
    s.child.stdin?.write(`${line}\n`);
    assert.match(await s.next(), reply, JSON.stringify(line.slice(0, 40)));
  }
  // Nothing of a refused line went out, the first pair of a bad one included.
  assert.equal(alive(a.pid ?? 0), true);
  s.child.stdin?.write(`15 ${a.pid}\n`);
  assert.equal(await s.next(), 'D');
  assert.equal(await ended(a), 'SIGTERM');
});

test('Signaller: the signals of one turn leave as one line through the real-time signaller', { skip: root ? false : 'needs CAP_SYS_NICE for SCHED_FIFO (run as root)' }, async (t) => {
  const s = await realtimeSignaller(t);
  const a = group(t);
  const b = group(t);
  await Promise.all([once(a, 'spawn'), once(b, 'spawn')]);
  s.signal(a.pid ?? 0, 'SIGTERM');
  s.signal(b.pid ?? 0, 'SIGKILL');
  // Queued for the end of the turn: nothing has gone out yet.
  assert.equal(alive(a.pid ?? 0) && alive(b.pid ?? 0), true);
  assert.equal(await ended(a), 'SIGTERM');
  assert.equal(await ended(b), 'SIGKILL');
});

test('Signaller: a line the signaller never carried out is sent by the agent once the signaller is gone', { skip: root ? false : 'needs CAP_SYS_NICE for SCHED_FIFO (run as root)' }, async (t) => {
  const s = await realtimeSignaller(t);
  const pid = s.pid ?? 0;
  const a = group(t);
  await once(a, 'spawn');
  // Stopped, it reads nothing: the line stays in its pipe, unconfirmed.
  process.kill(pid, 'SIGSTOP');
  s.signal(a.pid ?? 0, 'SIGTERM');
  // Nothing else may signal it: a wrong signal would have ended (and let this process reap) the
  // group within this look. Its length is the check's sensitivity; a correct agent passes however slow.
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(alive(a.pid ?? 0), true);
  process.kill(pid, 'SIGKILL');
  assert.equal(await ended(a), 'SIGTERM');
  assert.equal(s.realtime, false);
  // From now on the agent signals by itself.
  const b = group(t);
  await once(b, 'spawn');
  s.signal(b.pid ?? 0, 'SIGTERM');
  assert.equal(await ended(b), 'SIGTERM');
});

test('Signaller: without the binary, the agent signals by itself', async (t) => {
  const lines: string[] = [];
  const s = new Signaller(new Logger({ sink: (l) => lines.push(l) }), '/nonexistent/drydock-launch');
  t.after(() => s.close());
  s.start();
  const a = group(t);
  await once(a, 'spawn');
  s.signal(a.pid ?? 0, 'SIGTERM');
  assert.equal(await ended(a), 'SIGTERM');
  assert.equal(s.realtime, false);
  await eventually(() => (lines.some((l) => l.includes('signaller cannot start')) ? true : undefined), undefined, 20, 'the warning');
});

test('Signaller: a turn with more signals than a line holds is split into lines the signaller takes', { skip: root ? false : 'needs CAP_SYS_NICE for SCHED_FIFO (run as root)' }, async (t) => {
  const lines: string[] = [];
  const s = await realtimeSignaller(t, (l) => lines.push(l));
  const a = group(t);
  await once(a, 'spawn');
  // The same group over and over: the first kills it, the rest find it gone (not an error).
  for (let i = 0; i < MAX_LINE_SIGNALS * 2 + 1; i++) s.signal(a.pid ?? 0, 'SIGTERM');
  assert.equal(await ended(a), 'SIGTERM');
  // Three lines, each confirmed: a fourth signal after them goes through the signaller as well.
  const b = group(t);
  await once(b, 'spawn');
  s.signal(b.pid ?? 0, 'SIGKILL');
  assert.equal(await ended(b), 'SIGKILL');
  assert.equal(lines.some((l) => l.includes('refused')), false, lines.join('\n'));
  assert.equal(s.realtime, true);
});

test('a signal asked for after close() is not lost: the agent sends it itself (the last commit of a stopping agent makes kills durable then)', async (t) => {
  const s = await realtimeSignaller(t);
  const c = group(t);
  s.close();
  s.signal(c.pid ?? 0, 'SIGTERM');
  assert.equal(await ended(c), 'SIGTERM');
});
