/**
 * What the CLI says of an agent's conditions, from Drydock's view of the agents in the shape the
 * master writes it (the fixture is a real `GET /drydock/v1/agents/<id>` answer of an agent on a
 * full 4 MB filesystem): the STATUS column, `agent show`, `status`, and `run`'s no-offer lines.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentShowLines, diskPressureLine, noOfferReasons } from '../../cli/agent-view.js';
import { agentStatus, type AgentJson, type DrydockAgentJson } from '../../cli/drain.js';
import { clusterStatus, renderStatus } from '../../cli/status.js';
import { plainPaint } from '../../cli/terminal.js';
import { parseJson } from '../../shared/json.js';

/** A real answer (int64 nanoseconds kept exact by the CLI's JSON reader). */
const FULL = parseJson(`{"agent_id":{"value":"b594064e-a551-4f91-8b24-934570fee442-S0"},"hostname":"df-a","ip":"127.0.0.1","port":43303,"peer":"127.0.0.1","phase":"REGISTERED","state":"ACTIVE","connected":true,"active":true,"deactivated":false,"machine":{"id":{"hostname":"df-a","ip":"127.0.0.1"},"mode":"UP"},"conditions":{"disk_pressure":{"since":{"nanoseconds":1795801775258000000},"reason":"NO_SPACE","message":"no space left on device in /tmp/drydock-smallfs-smHhkD/agent (0 B free of 4.0 MB)","path":"/tmp/drydock-smallfs-smHhkD/agent","free_bytes":0,"total_bytes":4194304,"free_inodes":3085506,"total_inodes":3085511}}}`) as DrydockAgentJson;
const WELL: DrydockAgentJson = { agent_id: { value: 'b594-S1' }, hostname: 'df-b', ip: '127.0.0.1', port: 5051, phase: 'REGISTERED', state: 'ACTIVE', machine: { id: { hostname: 'df-b', ip: '127.0.0.1' }, mode: 'UP' }, conditions: {} };
/** 1795801775.258 s, 3 minutes 4.5 seconds later. */
const NOW = 1795801775258 + 184_500;
const LINE = 'DISK PRESSURE (NO_SPACE: no space left on device in /tmp/drydock-smallfs-smHhkD/agent (0 B free of 4.0 MB)) since 2026-11-27T17:49:35Z (3m 4s ago)';

test('the disk pressure line: reason, the agent\'s sentence, since when and how long ago', () => {
  const p = FULL.conditions?.disk_pressure;
  assert.ok(p !== undefined);
  assert.equal(diskPressureLine(p, NOW), LINE);
  // An agent clock ahead of ours is never "-3s ago"; a pressure without a message names its path.
  assert.equal(diskPressureLine({ ...p, message: '' }, 0), 'DISK PRESSURE (NO_SPACE: in /tmp/drydock-smallfs-smHhkD/agent) since 2026-11-27T17:49:35Z (0s ago)');
  // Terminal control characters in the agent's text are made safe.
  assert.equal(diskPressureLine({ reason: 'WRITE_FAILED', message: 'bad\u001b[2J' }, NOW), 'DISK PRESSURE (WRITE_FAILED: bad?[2J)');
});

test('agent list: the STATUS column says DISK PRESSURE beside the state', () => {
  const a: AgentJson = { agent_info: { hostname: 'df-a', port: 43303, id: { value: 'b594064e-a551-4f91-8b24-934570fee442-S0' } }, active: true, deactivated: false, pid: 'slave(1)@127.0.0.1:43303' };
  assert.equal(agentStatus(a, FULL), 'ACTIVE, DISK PRESSURE');
  assert.equal(agentStatus(a, WELL), 'ACTIVE');
  assert.equal(agentStatus(a, { ...FULL, state: 'DRAINING' }), 'DRAINING, DISK PRESSURE');
});

test('agent show: state, machine, the condition with its figures', () => {
  assert.deepEqual(agentShowLines(FULL, NOW), [
    'agent      df-a (b594064e-a551-4f91-8b24-934570fee442-S0) at 127.0.0.1:43303',
    'state      ACTIVE, DISK PRESSURE (no offers of its resources while it lasts)',
    'machine    df-a (127.0.0.1), UP',
    `condition  ${LINE}`,
    '           0 B of 4.0 MB free, 3085506 of 3085511 inodes free in /tmp/drydock-smallfs-smHhkD/agent',
  ]);
  assert.deepEqual(agentShowLines(WELL, NOW).slice(1), ['state      ACTIVE', 'machine    df-b (127.0.0.1), UP', 'condition  none']);
});

test('status: the agents under disk pressure counted and named, in the JSON too', () => {
  const s = clusterStatus({
    nowMs: NOW,
    master: { error: 'not asked' },
    agents: [],
    recovered: [],
    drydockAgents: [WELL, FULL],
    maintenance: {},
    schedule: {},
    snapshot: {},
    maintenancePlans: { plans: [] },
  });
  assert.deepEqual(s.disk_pressure, [{
    agent_id: 'b594064e-a551-4f91-8b24-934570fee442-S0',
    hostname: 'df-a',
    reason: 'NO_SPACE',
    message: 'no space left on device in /tmp/drydock-smallfs-smHhkD/agent (0 B free of 4.0 MB)',
    since: '2026-11-27T17:49:35.258Z',
    line: LINE,
  }]);
  const lines = renderStatus(s, plainPaint);
  const at = lines.findIndex((l) => l.startsWith('agents '));
  assert.match(lines[at] ?? '', /; 1 under DISK PRESSURE$/);
  assert.equal(lines[at + 1], `          df-a: ${LINE}`);
  // None under pressure: the agents line as before.
  const none = renderStatus(clusterStatus({ nowMs: NOW, master: { error: 'x' }, agents: [], recovered: [], drydockAgents: [WELL], maintenance: {}, schedule: {}, snapshot: {}, maintenancePlans: { plans: [] } }), plainPaint);
  assert.ok(!none.join('\n').includes('PRESSURE'));
});

test('run without an offer: the agents under disk pressure it could have had, by --hostname', () => {
  const said = `df-a is under ${LINE}: the master offers none of its resources while it lasts`;
  assert.deepEqual(noOfferReasons([WELL, FULL], 'DF-A', NOW), [said]);
  assert.deepEqual(noOfferReasons([WELL, FULL], undefined, NOW), [said]);
  assert.deepEqual(noOfferReasons([WELL, FULL], 'df-b', NOW), []);
});
