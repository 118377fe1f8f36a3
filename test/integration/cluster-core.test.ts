/**
 * End to end with the real daemons: a real agent and a real master keep their session through
 * a master restart, an agent `kill -9`, and a stretch where the agent stops answering pings.
 * The agent's identity survives all three.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { callApi, eventually, startAgent, startMaster, tempDir, type MasterHandle } from '../helpers/daemons.js';

interface AgentJson {
  agent_info: { id: { value: string }; hostname: string };
  active: boolean;
  pid: string;
  reregistered_time?: { nanoseconds: number };
}

async function getAgents(m: MasterHandle): Promise<{ agents: AgentJson[]; recovered_agents: Array<{ id: { value: string } }> }> {
  const r = await callApi(m.url, { type: 'GET_AGENTS' });
  assert.equal(r.status, 200, r.text);
  return (r.json as { get_agents: { agents: AgentJson[]; recovered_agents: Array<{ id: { value: string } }> } }).get_agents;
}

test('a real agent keeps its id through a master restart and its own kill -9', { timeout: 540_000 }, async (t) => {
  const masterDir = tempDir(t, 'drydock-e2e-master-');
  const agentDir = tempDir(t, 'drydock-e2e-agent-');
  const m1 = await startMaster(t, { workDir: masterDir });
  const a1 = await startAgent(t, { master: m1.address, ip: '127.0.0.2', hostname: 'agent-e2e', workDir: agentDir });
  const id = a1.agentId;
  assert.ok(id !== undefined);

  const first = await getAgents(m1);
  assert.equal(first.agents.length, 1);
  assert.equal(first.agents[0]?.agent_info.id.value, id);
  assert.equal(first.agents[0]?.agent_info.hostname, 'agent-e2e');
  assert.equal(first.agents[0]?.pid, `slave(1)@127.0.0.2:${a1.port}`);

  // Master restart on the same port and registry: the agent comes back as itself.
  await m1.daemon.stop();
  const m2 = await startMaster(t, { workDir: masterDir, port: m1.port });
  const back = await eventually(async () => {
    const g = await getAgents(m2);
    const a = g.agents.find((x) => x.agent_info.id.value === id);
    return a?.active === true ? a : undefined;
  }, undefined, 100, 'the agent to re-register after the master restart');
  assert.ok(back.reregistered_time !== undefined, 'a re-registration is recorded');
  assert.equal((await getAgents(m2)).agents.length, 1);
  await a1.daemon.waitForLog((r) => r.msg === 'registered' && r['reregistered'] === true && r['agentId'] === id);

  // kill -9 of the agent: the master sees it disconnected; the restarted agent is the same agent.
  a1.daemon.signal('SIGKILL');
  await a1.daemon.exited;
  await eventually(async () => ((await getAgents(m2)).agents.find((x) => x.agent_info.id.value === id)?.active === false ? true : undefined), undefined, 50, 'the agent to show as disconnected');
  const a2 = await startAgent(t, { master: m2.address, ip: '127.0.0.2', hostname: 'agent-e2e', workDir: agentDir });
  assert.equal(a2.agentId, id);
  await eventually(async () => ((await getAgents(m2)).agents.find((x) => x.agent_info.id.value === id)?.active === true ? true : undefined), undefined, 50, 'the restarted agent to be active');
  assert.equal((await getAgents(m2)).agents.length, 1);
});

test('an agent that stops answering pings becomes unreachable, then gets its identity back', { timeout: 300_000 }, async (t) => {
  const m = await startMaster(t, { flags: ['--agent_ping_timeout=200ms', '--max_agent_ping_timeouts=3'] });
  const a = await startAgent(t, { master: m.address, ip: '127.0.0.3', hostname: 'agent-frozen' });
  t.after(() => a.daemon.signal('SIGCONT'));
  const id = a.agentId;

  a.daemon.signal('SIGSTOP');
  await eventually(async () => ((await getAgents(m)).agents.some((x) => x.agent_info.id.value === id) ? undefined : true), undefined, 50, 'the frozen agent to leave GET_AGENTS');
  await m.daemon.waitForMsg('agent unreachable', { agentId: id });

  a.daemon.signal('SIGCONT');
  const back = await eventually(async () => (await getAgents(m)).agents.find((x) => x.agent_info.id.value === id && x.active), undefined, 100, 'the agent to come back');
  assert.equal(back.agent_info.hostname, 'agent-frozen');
});
