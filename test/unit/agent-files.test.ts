/**
 * Reading sandboxes from disk (agent/files.ts) on real files in a temp dir: what a task may leave
 * in its sandbox to lead a reader out of it (symlinks to /etc/passwd and to a sibling sandbox, a
 * symlinked directory, a FIFO) is refused with a 4xx and nothing read; symlinks that stay inside
 * are followed; reads are bounded; a listing reads its directory through its descriptor.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inside, MAX_READ_BYTES, parseGroups, SandboxFiles, type FileTarget } from '../../agent/files.js';
import type { ExecutorFacts } from '../../agent/supervisor.js';
import { tempDir } from '../helpers/daemons.js';

function target(directory: string, rest: string[]): FileTarget {
  const executor = { sandbox: directory } as ExecutorFacts;
  return { attachment: { virtual: directory, directory, executor }, rest, virtual: [directory, ...rest].join('/') };
}

test('sandbox files: reads confined to the sandbox, bounded; symlinks out and FIFOs refused', async (t) => {
  const root = tempDir(t, 'drydock-files-');
  const sandbox = join(root, 'sandboxes', 'F', 'task');
  const sibling = join(root, 'sandboxes', 'F', 'other');
  mkdirSync(join(sandbox, 'sub'), { recursive: true });
  mkdirSync(sibling, { recursive: true });
  writeFileSync(join(sandbox, 'stdout'), 'hello\n');
  writeFileSync(join(sandbox, 'big'), Buffer.alloc(MAX_READ_BYTES * 2 + 10, 'x'));
  writeFileSync(join(sandbox, 'sub', 'inner'), 'inner\n');
  writeFileSync(join(sibling, 'secret'), 'sibling-secret\n');
  symlinkSync('/etc/passwd', join(sandbox, 'leak'));
  symlinkSync('stdout', join(sandbox, 'alias'));
  symlinkSync(sibling, join(sandbox, 'next-door'));
  symlinkSync('/etc', join(sandbox, 'etc'));
  symlinkSync('sub', join(sandbox, 'sub-link'));
  execFileSync('mkfifo', [join(sandbox, 'pipe')]);
  const files = new SandboxFiles({ now: () => 0 });

  const read = await files.read(target(sandbox, ['stdout']), 0, undefined);
  assert.ok(read.ok);
  assert.deepEqual([read.value.size, read.value.data.toString()], [6, 'hello\n']);
  const part = await files.read(target(sandbox, ['stdout']), 1, 3);
  assert.ok(part.ok && part.value.data.toString() === 'ell');
  const past = await files.read(target(sandbox, ['stdout']), 99, undefined);
  assert.ok(past.ok && past.value.data.length === 0 && past.value.size === 6);
  const big = await files.read(target(sandbox, ['big']), 0, undefined);
  assert.ok(big.ok && big.value.data.length === MAX_READ_BYTES, 'bounded');
  const bigAsked = await files.read(target(sandbox, ['big']), 0, 10 * MAX_READ_BYTES);
  assert.ok(bigAsked.ok && bigAsked.value.data.length === MAX_READ_BYTES, 'bounded whatever the length asked');
  const alias = await files.read(target(sandbox, ['alias']), 0, undefined);
  assert.ok(alias.ok && alias.value.data.toString() === 'hello\n', 'a symlink inside is followed');
  const viaLink = await files.read(target(sandbox, ['sub-link', 'inner']), 0, undefined);
  assert.ok(viaLink.ok && viaLink.value.data.toString() === 'inner\n');

  const refused: Array<[string[], string]> = [
    [['leak'], 'FILES_INACCESSIBLE'],
    [['next-door', 'secret'], 'FILES_INACCESSIBLE'],
    [['etc', 'passwd'], 'FILES_INACCESSIBLE'],
    [['pipe'], 'FILES_NOT_REGULAR'],
    [['sub'], 'FILES_IS_DIRECTORY'],
    [['nope'], 'FILE_NOT_FOUND'],
    [['stdout', 'below'], 'FILE_NOT_FOUND'],
  ];
  for (const [rest, code] of refused) {
    const r = await files.read(target(sandbox, rest), 0, undefined);
    assert.equal(r.ok ? 'read' : r.error.code, code, rest.join('/'));
    const d = await files.download(target(sandbox, rest));
    if (d.ok) await d.value.handle.close();
    assert.equal(d.ok ? 'opened' : d.error.code, code === 'FILES_IS_DIRECTORY' ? 'FILES_IS_DIRECTORY' : code, `download ${rest.join('/')}`);
  }
  const gone = await files.read(target(join(root, 'sandboxes', 'F', 'never-made'), ['stdout']), 0, undefined);
  assert.equal(gone.ok ? 'read' : gone.error.code, 'FILE_NOT_FOUND', 'a sandbox never made');

  const listing = await files.browse(target(sandbox, []));
  assert.ok(listing.ok);
  assert.deepEqual(listing.value.map((f) => f.path.slice(sandbox.length + 1)), ['alias', 'big', 'etc', 'leak', 'next-door', 'pipe', 'stdout', 'sub', 'sub-link']);
  const mode = (name: string): number => (listing.value.find((f) => f.path.endsWith(`/${name}`))?.mode ?? 0) & 0o170000;
  assert.equal(mode('leak'), 0o120000, 'a link out is shown as the link');
  assert.equal(mode('next-door'), 0o120000);
  assert.equal(mode('alias'), 0o100000, 'a link inside as its target');
  assert.equal(mode('sub-link'), 0o040000);
  assert.equal(mode('pipe'), 0o010000);
  for (const rest of [['etc'], ['next-door'], ['leak']]) {
    const b = await files.browse(target(sandbox, rest));
    assert.equal(b.ok ? 'listed' : b.error.code, 'FILES_INACCESSIBLE', rest.join('/'));
  }
  const file = await files.browse(target(sandbox, ['stdout']));
  assert.deepEqual(file.ok ? file.value : file.error.code, [], 'a file lists as nothing (as Mesos)');
  const download = await files.download(target(sandbox, ['stdout']));
  assert.ok(download.ok);
  assert.equal(download.value.size, 6);
  assert.equal(download.value.name, 'stdout');
  await download.value.handle.close();
});

test('containment compares whole path components; group lines read as gid -> name', () => {
  const cases: Array<[string, string, boolean]> = [
    ['/w/s/task', '/w/s/task', true],
    ['/w/s/task', '/w/s/task/stdout', true],
    ['/w/s/task', '/w/s/task2/stdout', false],
    ['/w/s/task', '/w/s', false],
    ['/', '/etc', true],
  ];
  for (const [root, path, want] of cases) assert.equal(inside(root, path), want, `${root} ${path}`);
  assert.deepEqual(parseGroups('root:x:0:\n# c\nwheel:x:10:a,b\nbad\n:x:1:\nweird:x:nope:\n'), [[0, 'root'], [10, 'wheel']]);
});
