/**
 * A fake agent for master tests: the one agent double (scripts/harness/agent-double.ts), a
 * real ws client speaking shared/protocol.ts.
 */

export { AgentDouble as FakeAgent, agentSelf, registerMessage, type AgentDoubleOptions as FakeAgentOptions, type RegisterOptions } from '../../scripts/harness/agent-double.js';
