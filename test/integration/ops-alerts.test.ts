/**
 * The Prometheus alert rules (ops/prometheus/) checked by Prometheus' own tool: `promtool check
 * rules` (syntax, expressions, templates) and `promtool test rules` (the unit tests beside them:
 * which alerts fire on which series). promtool comes with Debian's `prometheus` package, which
 * .ci/run installs; elsewhere without it the test is skipped with the reason, under CI=true it
 * is an error. That every metric the rules name is one the master exports is
 * test/integration/master-metrics.test.ts's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../helpers/daemons.js';

function promtoolSkip(): string | undefined {
  if (spawnSync('promtool', ['--version']).status === 0) return undefined;
  const why = 'promtool is not installed (Debian: apt-get install prometheus)';
  if (process.env['CI'] === 'true') throw new Error(`${why}: the alert rules must be checked under CI=true`);
  return `${why}: alert rules not checked`;
}

const skip = promtoolSkip();
const DIR = join(ROOT, 'ops', 'prometheus');

test('promtool: the alert rules are valid, and their unit tests pass (DrydockAgentDiskPressure fires after 2 minutes of disk pressure)', { skip }, () => {
  const check = spawnSync('promtool', ['check', 'rules', 'drydock-alerts.yml'], { cwd: DIR, encoding: 'utf8', timeout: 60_000 });
  assert.equal(check.status, 0, `${check.stdout}${check.stderr}`);
  assert.match(check.stdout, /SUCCESS: \d+ rules found/);
  const unit = spawnSync('promtool', ['test', 'rules', 'drydock-alerts.test.yml'], { cwd: DIR, encoding: 'utf8', timeout: 60_000 });
  assert.equal(unit.status, 0, `${unit.stdout}${unit.stderr}`);
});
