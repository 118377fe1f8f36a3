/**
 * The impact preview's row (master/api/preview.ts) over fake ports: read-only, authorized as the
 * action it previews (drain_agents on the agent, start_maintenances on every machine,
 * create_maintenance_plans and run_maintenance_hooks for a plan), and listing of tasks,
 * frameworks and agents only what the caller may view, the rest counted as hidden.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Authorizer, parseAcls, type MachineObject } from '../../shared/acls.js';
import type { MachineId } from '../../shared/machine.js';
import type { Task } from '../../shared/mesos.js';
import { CALLS } from '../../master/api/calls.js';
import { authorizePlanCreation } from '../../master/api/plans.js';
import { preview, previewCheck, previewFromBody, type PreviewInput } from '../../master/api/preview.js';
import type { AgentEntry } from '../../master/cores/agents.js';
import type { FrameworkEntry } from '../../master/cores/frameworks.js';
import type { Machine } from '../../master/cores/maintenance.js';
import { Access, MasterSecurity } from '../../master/security/security.js';
import type { PlanPreview, Queries } from '../../master/term/queries.js';

/** A port whose every method throws unless faked: the preview must read nothing else. */
function fake<T extends object>(name: string, methods: Partial<T>): T {
  return new Proxy(methods as T, {
    get(target, key) {
      const v = (target as Record<string | symbol, unknown>)[key];
      if (v !== undefined || typeof key === 'symbol' || key === 'then') return v;
      throw new Error(`${name}.${String(key)} is not faked`);
    },
  });
}

function agent(id: string, hostname: string, ip: string, rack: string, tasks: Task[]): AgentEntry {
  return {
    id,
    info: { hostname, ip, port: 5051, resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 2 } }], attributes: [{ name: 'rack', type: 'TEXT', text: { value: rack } }] },
    phase: 'REGISTERED',
    connected: true,
    deactivated: false,
    drain: undefined,
    capabilities: ['AGENT_DRAINING'],
    tasks: new Map(tasks.map((t) => [`${t.framework_id.value}\u0000${t.task_id.value}`, t])),
  } as unknown as AgentEntry;
}

function task(id: string, agentId: string, frameworkId: string): Task {
  return { name: id, task_id: { value: id }, framework_id: { value: frameworkId }, agent_id: { value: agentId }, state: 'TASK_RUNNING', resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 1 } }], statuses: [] };
}

const A = agent('A', 'h1', '10.0.0.1', 'r1', [task('web-1', 'A', 'F-alice'), task('secret-1', 'A', 'F-bob')]);
const B = agent('B', 'h2', '10.0.0.2', 'r2', []);
const FRAMEWORKS: Record<string, FrameworkEntry> = {
  'F-alice': { id: 'F-alice', info: { user: 'alice', name: 'web' } } as unknown as FrameworkEntry,
  'F-bob': { id: 'F-bob', info: { user: 'bob', name: 'secret' } } as unknown as FrameworkEntry,
};
const PLAN: PlanPreview = { ok: true, name: 'p', strategy: 'serial', phaseStrategy: 'serial', maxParallel: undefined, maxDown: undefined, hook: 'patch', phases: [{ name: 'all', machines: [{ hostname: 'h1', ip: '10.0.0.1' }] }], waves: [{ phases: ['all'], machines: [{ hostname: 'h1', ip: '10.0.0.1' }] }] };

const rackOf = (id: MachineId): string => (id.hostname === 'h1' ? 'r1' : 'r2');
const queries = fake<Queries>('queries', {
  agents: () => [A, B],
  agent: (id: string) => [A, B].find((a) => a.id === id),
  agentObject: (id: string): MachineObject | undefined => {
    const a = [A, B].find((x) => x.id === id);
    return a === undefined ? undefined : { agentId: a.id, hostname: a.info.hostname, ip: a.info.ip, attributes: { rack: rackOf({ hostname: a.info.hostname }) } };
  },
  machineObject: (id: MachineId): MachineObject => ({ hostname: id.hostname, ip: id.ip, attributes: { rack: rackOf(id) } }),
  agentMachine: () => undefined,
  frameworkEver: (id: string) => FRAMEWORKS[id],
  machines: (): Iterable<Machine> => [{ key: 'x', id: { hostname: 'h1', ip: '10.0.0.1' }, mode: 'DRAINING', unavailability: { startNs: 0n }, statuses: new Map() }],
  planPreview: () => PLAN,
});

/**
 * `rack1` may drain and take down rack r1, create plans there without the hook, view agents and
 * alice's tasks and frameworks only; `ops` may do all of it.
 */
function security(): MasterSecurity {
  const parsed = parseAcls(JSON.stringify({
    permissive: false,
    drain_agents: [{ principals: { values: ['ops'] }, agents: { type: 'ANY' } }, { principals: { values: ['rack1'] }, agents: { values: ['rack:r1'] } }],
    start_maintenances: [{ principals: { values: ['ops'] }, machines: { type: 'ANY' } }, { principals: { values: ['rack1'] }, machines: { values: ['rack:r1'] } }],
    create_maintenance_plans: [{ principals: { values: ['ops', 'rack1'] }, machines: { type: 'ANY' } }],
    run_maintenance_hooks: [{ principals: { values: ['ops'] }, hooks: { type: 'ANY' } }],
    view_agents: [{ principals: { values: ['ops', 'rack1'] }, agents: { type: 'ANY' } }],
    view_tasks: [{ principals: { values: ['ops'] }, users: { type: 'ANY' } }, { principals: { values: ['rack1'] }, users: { values: ['alice'] } }],
    view_frameworks: [{ principals: { values: ['ops'] }, users: { type: 'ANY' } }, { principals: { values: ['rack1'] }, users: { values: ['alice'] } }],
  }));
  assert.ok(parsed.ok);
  if (!parsed.ok) throw new Error('acls');
  return new MasterSecurity({
    config: { authenticateHttpReadwrite: false, authenticateHttpReadonly: false, authenticateFrameworks: false, authenticateAgents: false, credentialsFile: undefined, acls: '{}' },
    authorizer: new Authorizer(parsed.value),
  });
}

function input(body: unknown): PreviewInput {
  const d = previewFromBody({ method: 'POST', below: [], query: '', body: JSON.stringify(body) });
  assert.ok(d.ok, JSON.stringify(d));
  if (!d.ok) throw new Error('decode');
  return d.value;
}

test('the preview row: read-only, its ACL the previewed action\'s', () => {
  const row = CALLS.find((r) => r.name === 'PREVIEW');
  assert.equal(row?.access, 'read');
  assert.deepEqual(row?.acl.actions, ['drain_agents', 'mark_agents_gone', 'start_maintenances', 'create_maintenance_plans', 'run_maintenance_hooks']);
  assert.ok(row?.http?.some((w) => w.paths.describe === '/drydock/v1/preview' && Array.isArray(w.methods) && w.methods.join() === 'POST'));
});

test('preview: authorized as the action itself, before anything is read', () => {
  const s = security();
  const ctx = (who: string | undefined) => ({ access: new Access(s, who), queries });
  const drainA = input({ drain_agent: { agent_id: { value: 'A' } } });
  const drainB = input({ drain_agent: { agent_id: { value: 'B' } } });
  assert.equal(previewCheck(drainA, ctx('rack1')), undefined);
  assert.equal(previewCheck(drainB, ctx('rack1'))?.code, 'FORBIDDEN', 'rack1 may not drain rack r2');
  assert.equal(previewCheck(drainA, ctx(undefined))?.code, 'FORBIDDEN', 'nor may an anonymous caller');
  // mark_gone needs mark_agents_gone too, as the drain does.
  assert.match(previewCheck(input({ drain_agent: { agent_id: { value: 'A' }, mark_gone: true } }), ctx('rack1'))?.message ?? '', /mark_agents_gone/);
  const down = (hostname: string, ip: string) => input({ start_maintenance: { machines: [{ hostname, ip }] } });
  assert.equal(previewCheck(down('h1', '10.0.0.1'), ctx('rack1')), undefined);
  assert.equal(previewCheck(down('h2', '10.0.0.2'), ctx('rack1'))?.code, 'FORBIDDEN');
  // A plan: its machines and its hook, once its spec is read (rack1 may not run the hook).
  const plan = input({ maintenance_plan: 'name: p\n' });
  const refused = preview(plan, queries, new Access(s, 'rack1'), authorizePlanCreation(new Access(s, 'rack1'), queries));
  assert.ok(refused.kind === 'error' && refused.error.code === 'FORBIDDEN' && refused.error.message.includes('run_maintenance_hooks'), JSON.stringify(refused));
  const allowed = preview(plan, queries, new Access(s, 'ops'), authorizePlanCreation(new Access(s, 'ops'), queries));
  assert.equal(allowed.kind, 'value');
});

test('preview: lists only the tasks and frameworks the caller may view; the rest is counted', () => {
  const s = security();
  const drainA = input({ drain_agent: { agent_id: { value: 'A' } } });
  const view = (who: string) => {
    const a = preview(drainA, queries, new Access(s, who), authorizePlanCreation(new Access(s, who), queries));
    assert.equal(a.kind, 'value');
    return (a as { value: { impact: { tasks: { count: number; hidden: number; frameworks: Array<{ framework_id: string; name: string; tasks: Array<{ name: string }> }> } } } }).value.impact.tasks;
  };
  const rack1 = view('rack1');
  assert.equal(rack1.count, 2);
  assert.equal(rack1.hidden, 1, "bob's task is counted, not shown");
  assert.deepEqual(rack1.frameworks.map((f) => [f.framework_id, f.name, f.tasks.map((t) => t.name)]), [['F-alice', 'web', ['web-1']]]);
  const ops = view('ops');
  assert.deepEqual([ops.count, ops.hidden, ops.frameworks.length], [2, 0, 2]);
});

test('preview requests: one action, decoded as its call is', () => {
  const bad = (body: string) => previewFromBody({ method: 'POST', below: [], query: '', body });
  for (const [body, code] of [['{}', 'PREVIEW_INVALID'], ['not json', 'PREVIEW_INVALID'], ['{"drain_agent":{}}', 'BODY_NOT_CALL'], ['{"start_maintenance":[]}', 'PREVIEW_INVALID'], ['{"start_maintenance":{"machines":[7]}}', 'BODY_NOT_CALL'], ['{"maintenance_plan":7}', 'PREVIEW_INVALID']] as const) {
    const d = bad(body);
    assert.ok(!d.ok && d.error.code === code && d.error.status === 400, `${body}: ${JSON.stringify(d)}`);
  }
  // A spec as a JSON object is taken as its JSON text.
  assert.deepEqual(input({ maintenance_plan: { name: 'p', window: '1hrs' } }), { kind: 'maintenance_plan', spec: '{"name":"p","window":"1hrs"}' });
});
