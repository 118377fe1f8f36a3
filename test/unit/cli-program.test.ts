/**
 * The `drydock` command tree as a whole: every command an operator runs takes --json (a new
 * command without it fails here), the exit status table is the one `--help` prints, and shell
 * completion is generated from the same tree: bash completes subcommands, aliases and options
 * (run in a real bash), zsh's script carries the same table (run through zsh when installed).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { program } from '../../cli/program.js';
import { bashScript, commandPaths, commandSpec, leafCommands, zshScript } from '../../cli/completion.js';
import { EXIT_CODES, EXIT_FAILED, EXIT_FORBIDDEN, EXIT_INTERRUPTED, EXIT_OK, EXIT_RUN_FAILED, EXIT_TIMEOUT, EXIT_UNAUTHENTICATED, EXIT_USAGE, exitCodeHelp } from '../../cli/exit-codes.js';
import * as serviceApi from '../../cli/service-api.js';
import * as terminal from '../../cli/terminal.js';
import { EVENT_DEADLINE_MS } from '../../scripts/harness/deadline.js';

const spec = commandSpec(program);

test('every leaf command takes --json', () => {
  const leaves = leafCommands(spec);
  assert.ok(leaves.length >= 30, `found ${leaves.length} leaf commands`);
  const without = leaves.filter((l) => !l.spec.options.some((o) => o.flags.includes('--json') && !o.takesValue)).map((l) => l.path);
  assert.deepEqual(without, [], 'commands without --json');
  // The ones this test is about, so a walk that finds nothing cannot pass.
  for (const path of ['status', 'agent drain', 'agent gone', 'tasks', 'run', 'maintenance plan show', 'plan start', 'pod info', 'completion']) {
    assert.ok(leaves.some((l) => l.path === path), path);
  }
});

test('exit statuses: one table, stable numbers, printed by --help', () => {
  assert.deepEqual([EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_UNAUTHENTICATED, EXIT_FORBIDDEN, EXIT_TIMEOUT, EXIT_RUN_FAILED, EXIT_INTERRUPTED], [0, 1, 2, 3, 4, 124, 125, 130]);
  assert.deepEqual(EXIT_CODES.map((c) => c.code), [0, 1, 2, 3, 4, 124, 125, 130]);
  // The older homes of the constants are the same values.
  assert.deepEqual([serviceApi.EXIT_FAILED, serviceApi.EXIT_USAGE, serviceApi.EXIT_UNAUTHENTICATED, serviceApi.EXIT_FORBIDDEN, terminal.EXIT_INTERRUPTED], [1, 2, 3, 4, 130]);
  assert.equal(exitCodeHelp([{ code: 3, meaning: 'x' }, { code: 130, meaning: 'y' }]), '  3    x\n  130  y');
  let help = '';
  program.configureOutput({ writeOut: (s) => (help += s) });
  program.outputHelp();
  assert.ok(help.includes(`Exit status`) && help.includes(exitCodeHelp()), help);
});

test('completion: the tree has every command with its aliases and options', () => {
  const paths = commandPaths(spec).map((c) => c.path);
  assert.ok(paths.includes('maintenance plan create') && paths.includes('agent drain'));
  const mplan = commandPaths(spec).find((c) => c.path === 'maintenance plan')?.spec;
  assert.deepEqual(mplan?.commands.find((c) => c.name === 'continue')?.aliases, ['resume']);
  const drain = commandPaths(spec).find((c) => c.path === 'agent drain')?.spec;
  assert.deepEqual(drain?.options.find((o) => o.flags.includes('--max_grace_period'))?.takesValue, true);
  assert.deepEqual(drain?.options.find((o) => o.flags.includes('--wait'))?.takesValue, false);
  assert.deepEqual(commandPaths(spec).find((c) => c.path === 'completion')?.spec.argChoices, ['bash', 'zsh']);
});

/** What bash completes for the words of `line` (a trailing space: completing a new word). */
function bashComplete(script: string, line: string): string[] {
  const r = spawnSync('bash', ['--norc', '--noprofile', '-c', `${script}
read -ra COMP_WORDS <<< "$1"
[[ "$1" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((\${#COMP_WORDS[@]} - 1))
_drydock
printf '%s\\n' "\${COMPREPLY[@]}"`, '_', line], { encoding: 'utf8', timeout: EVENT_DEADLINE_MS });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\n').filter((l) => l !== '').sort();
}

test('completion bash: subcommands, aliases, options of the command reached, values skipped', () => {
  const script = bashScript(spec);
  const cases: Array<[string, string[]]> = [
    ['drydock ', ['agent', 'completion', 'machine', 'maintenance', 'plan', 'pod', 'run', 'status', 'task', 'tasks']],
    ['drydock ag', ['agent']],
    ['drydock agent d', ['deactivate', 'drain']],
    ['drydock maintenance plan res', ['restart', 'resume']],
    // An option's value is not a command: `agent` after --master X is still the first command.
    ['drydock --master 127.0.0.1:5050 ag', ['agent']],
    ['drydock --master=127.0.0.1:5050 agent dr', ['drain']],
    ['drydock agent drain agent-3 --w', ['--wait']],
    // The program's options complete after a subcommand too (commander takes them there).
    ['drydock status --mas', ['--master']],
    // An alias descends like its command: resume takes --phase.
    ['drydock maintenance plan resume kernel --ph', ['--phase']],
    ['drydock completion ', ['bash', 'zsh']],
    ['drydock plan start deploy -p X=1 --js', ['--json']],
    // Completing an option's value: no words (bash falls back to file names).
    ['drydock --master ', []],
  ];
  for (const [line, want] of cases) assert.deepEqual(bashComplete(script, line), want, line);
  // bash reads the script without complaint and registers the function for drydock.
  const r = spawnSync('bash', ['--norc', '--noprofile', '-c', `${script}\ncomplete -p drydock`], { encoding: 'utf8', timeout: EVENT_DEADLINE_MS });
  assert.deepEqual([r.status, r.stdout.trim(), r.stderr], [0, 'complete -o default -F _drydock drydock', '']);
});

test('completion zsh: a #compdef function with the same table; parsed by zsh when it is installed', () => {
  const script = zshScript(spec);
  assert.ok(script.startsWith('#compdef drydock\n'));
  assert.match(script, /\n {4}'maintenance plan\|resume'\) echo 'continue' ;;\n/);
  assert.match(script, /\n {4}'agent drain'\) echo '--max_grace_period --mark_gone --wait --timeout --dry-run --json --help' ;;\n/);
  assert.match(script, /compadd -- \$\{=\$\(_drydock_subs "\$cmdpath"\)\}/);
  assert.match(script, /\n {2}compdef _drydock drydock\n/);
  assert.ok(!/\bpath=/.test(script), 'zsh ties $path to $PATH: the script must not assign it');
  const zsh = spawnSync('zsh', ['-n', '-c', script], { encoding: 'utf8', timeout: EVENT_DEADLINE_MS });
  if (zsh.error === undefined) assert.equal(zsh.status, 0, zsh.stderr);
});
