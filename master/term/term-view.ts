/**
 * What the HTTP layer (operator API, event stream, maintenance and scheduler endpoints) uses
 * of a term: read-only views of the model for answers, and the services' commands for calls.
 * An interface, so those modules depend on no term machinery (term.ts implements it).
 */

import type { AgentTable } from '../cores/agents.js';
import type { MasterConfig } from '../process/config.js';
import type { DrainService } from '../services/drain.js';
import type { MasterEvents } from './events.js';
import type { MaintenanceState } from '../cores/maintenance.js';
import type { MaintenanceService } from '../services/maintenance.js';
import type { MasterIdentity } from '../process/master-info.js';
import type { FrameworksService } from '../services/frameworks.js';
import type { MasterSecurity } from '../security/security.js';

export interface TermView {
  readonly config: MasterConfig;
  /** Authentication, ACLs and the audit log (issue 13). */
  readonly security: MasterSecurity;
  readonly identity: MasterIdentity;
  readonly processStartMs: number;
  readonly electedMs: number;
  readonly bus: MasterEvents;
  readonly agents: AgentTable;
  readonly maintenance: MaintenanceState;
  readonly services: { readonly frameworks: FrameworksService; readonly drain: DrainService; readonly maintenance: MaintenanceService };
  masterInfo(): Record<string, unknown>;
  otherMasters(): ReadonlyArray<Record<string, unknown>>;
}
