/**
 * `npm start -- --secure`'s ACLs (scripts/cluster-secure.ts aclsFor) as the master reads them
 * (shared/acls.ts): ops may do everything, the viewer only look, agent-N register only
 * agent-N's machine, the scheduler run its frameworks, and nobody else anything.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ACL_ACTIONS, Authorizer, parseAcls, type AclAction, type AclObject } from '../../shared/acls.js';
import { VIEW_ACTIONS, aclsFor } from '../../scripts/cluster-secure.js';

const parsed = parseAcls(JSON.stringify(aclsFor(['agent-1', 'agent-2'])));
assert.ok(parsed.ok, parsed.ok ? '' : parsed.error);
const authz = new Authorizer(parsed.value);

const AGENT_1: AclObject = { hostname: 'agent-1', ip: '127.0.0.2', agentId: 'S0', attributes: { rack: 'r1' } };
const AGENT_2: AclObject = { hostname: 'agent-2', ip: '127.0.0.3', agentId: 'S1' };
/** An object for an action: a machine for machine objects, a name for the rest. */
const objectFor = (a: AclAction): AclObject => (a === 'run_maintenance_hooks' ? 'patch' : a.includes('agent') || a.includes('maintenance') ? AGENT_1 : 'scheduler');

test('the secure cluster ACLs: deny by default, ops everything, viewer views only', () => {
  assert.equal(parsed.ok && parsed.value.permissive, false);
  assert.ok(VIEW_ACTIONS.includes('view_agents') && VIEW_ACTIONS.includes('get_maintenance_statuses') && !VIEW_ACTIONS.includes('drain_agents'));
  for (const action of ACL_ACTIONS) {
    const o = objectFor(action);
    assert.equal(authz.allows(action, 'ops', o), action !== 'register_agents', `ops ${action}`);
    assert.equal(authz.allows(action, 'viewer', o), VIEW_ACTIONS.includes(action), `viewer ${action}`);
    assert.equal(authz.allows(action, undefined, o), false, `anonymous ${action}`);
    assert.equal(authz.allows(action, 'stranger', o), false, `an unknown principal ${action}`);
  }
});

test('the secure cluster ACLs: each agent principal registers its own machine only; the scheduler its frameworks', () => {
  const cases: Array<[AclAction, string, AclObject, boolean]> = [
    ['register_agents', 'agent-1', AGENT_1, true],
    ['register_agents', 'agent-1', AGENT_2, false],
    ['register_agents', 'agent-2', AGENT_2, true],
    ['register_agents', 'agent-2', undefined, false],
    ['drain_agents', 'agent-1', AGENT_1, false],
    ['register_frameworks', 'scheduler', '*', true],
    ['run_tasks', 'scheduler', 'nobody', true],
    ['teardown_frameworks', 'scheduler', 'scheduler', true],
    ['teardown_frameworks', 'scheduler', 'ops', false],
    ['teardown_frameworks', 'ops', 'scheduler', true],
    ['drain_agents', 'scheduler', AGENT_1, false],
    ['view_tasks', 'scheduler', 'root', true],
    // Running the master's hooks: ops only.
    ['run_maintenance_hooks', 'ops', 'patch', true],
    ['run_maintenance_hooks', 'viewer', 'patch', false],
    ['run_maintenance_hooks', 'scheduler', 'patch', false],
    ['run_maintenance_hooks', 'agent-1', 'patch', false],
  ];
  for (const [action, principal, object, want] of cases) assert.equal(authz.allows(action, principal, object), want, `${principal} ${action} ${JSON.stringify(object)}`);
});

test('no agents: the ACLs still parse (register_agents is an empty list)', () => {
  const r = parseAcls(JSON.stringify(aclsFor([])));
  assert.ok(r.ok, r.ok ? '' : r.error);
  assert.equal(new Authorizer(r.value).allows('register_agents', 'agent-1', AGENT_1), false);
});
