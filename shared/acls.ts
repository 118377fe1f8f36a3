/**
 * What a principal may do: the `--acls` of the master and of the agent (one file serves both, as
 * in Mesos), in Mesos' ACL format and with Mesos' local authorizer semantics, pure.
 *
 * The format: `{"permissive": true|false, "<action>": [{"principals": E, "<object>": E}, ...]}`
 * where an entity E is `{"values": [...]}` or `{"type": "ANY"|"NONE"}`. For a request the entries
 * of its action are tried in order; the first whose principals and object both *match* decides,
 * and it allows when both also *allow* (a NONE entity matches everything and allows nothing, so
 * `{"principals": {"values": ["ops"]}, "agents": {"type": "NONE"}}` is a deny). No entry matching:
 * `permissive` decides (true when left out, as in Mesos). An anonymous request only matches ANY
 * and NONE principals; a request without an object (an unknown agent) only matches ANY and NONE
 * objects.
 *
 * Beyond Mesos: the `agents` and `machines` objects can name machines, not only ANY or NONE. A
 * value is `hostname:GLOB`, `ip:GLOB`, `id:AGENT_ID`, or `ATTRIBUTE:GLOB` (an agent attribute, e.g.
 * `rack:r1`); a bare GLOB is a hostname. `*` matches any run of characters, `?` one; hostnames
 * compare without case. An object matches an entry when any of its values matches it.
 *
 * One rule of Drydock's own: `run_maintenance_hooks` (running one of the master's hooks, a command
 * on the master, from a maintenance plan; object `hooks`, the hook names) is denied unless an
 * entry grants it, whatever `permissive` says. A master whose ACLs predate hooks, or that leaves
 * everything else permissive, must not hand out a shell on itself by default. Without ACLs at all
 * (an open master) it is allowed, like every action.
 */

/** Every action, with the name of its object field (Mesos' names where Mesos has the action). */
export const ACL_OBJECT_FIELDS = {
  register_frameworks: 'roles',
  run_tasks: 'users',
  teardown_frameworks: 'framework_principals',
  view_frameworks: 'users',
  view_tasks: 'users',
  view_agents: 'agents',
  // Mesos' names: an executor (GET_EXECUTORS, the agent's /state) and its sandbox (/files/*,
  // LIST_FILES, READ_FILE) by the user it runs as: its command's user, else its framework's.
  view_executors: 'users',
  access_sandboxes: 'users',
  view_flags: 'flags',
  // Mesos' VIEW_ROLE: the roles of /roles and GET_ROLES, reservations in /state. The object is the role's name.
  view_roles: 'roles',
  // Mesos' agent action: SET_LOGGING_LEVEL on the agent API. Its object is implicit: ANY or NONE.
  set_log_level: 'level',
  get_maintenance_schedules: 'machines',
  update_maintenance_schedules: 'machines',
  get_maintenance_statuses: 'machines',
  start_maintenances: 'machines',
  stop_maintenances: 'machines',
  drain_agents: 'agents',
  deactivate_agents: 'agents',
  reactivate_agents: 'agents',
  mark_agents_gone: 'agents',
  register_agents: 'agents',
  view_maintenance_plans: 'machines',
  create_maintenance_plans: 'machines',
  update_maintenance_plans: 'machines',
  delete_maintenance_plans: 'machines',
  // Mesos' GET_ENDPOINT_WITH_PATH: the object is the endpoint's path (`/metrics/snapshot`).
  get_endpoints: 'paths',
  // Drydock: naming one of the master's maintenance hooks in a plan (and re-running it); the object is the hook's name.
  run_maintenance_hooks: 'hooks',
} as const;

export type AclAction = keyof typeof ACL_OBJECT_FIELDS;

export const ACL_ACTIONS = Object.keys(ACL_OBJECT_FIELDS) as AclAction[];

/** Actions no entry matching means "no", whatever `permissive` says (see the module comment). */
export const DENIED_UNLESS_GRANTED: ReadonlySet<AclAction> = new Set<AclAction>(['run_maintenance_hooks']);

/** A machine or an agent as an ACL object: whatever of it is known. */
export interface MachineObject {
  readonly hostname?: string | undefined;
  readonly ip?: string | undefined;
  readonly agentId?: string | undefined;
  /** Text and scalar attributes of the agent on it, by name. */
  readonly attributes?: Readonly<Record<string, string>> | undefined;
}

/** What a request acts on: a name (role, user, principal, flag), a machine, or unknown (ANY). */
export type AclObject = string | MachineObject | undefined;

type Matcher = (o: MachineObject) => boolean;

/** One compiled entity: ANY, NONE, or some values (names, or machine matchers). */
type Entity = { kind: 'ANY' } | { kind: 'NONE' } | { kind: 'SOME'; names: ReadonlySet<string>; machines: readonly Matcher[] };

interface Entry {
  readonly principals: Entity;
  readonly object: Entity;
}

export interface Acls {
  readonly permissive: boolean;
  readonly entries: ReadonlyMap<AclAction, readonly Entry[]>;
  /** Entries in all, for logs. */
  readonly count: number;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

/** Parses ACLs from their JSON text. Every error names the path (`drain_agents[2].agents.values[0]`). */
export function parseAcls(text: string): Parsed<Acls> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return { ok: false, error: `not valid JSON: ${(e as Error).message}` };
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return { ok: false, error: 'expected a JSON object' };
  let permissive = true;
  const entries = new Map<AclAction, Entry[]>();
  let count = 0;
  for (const [key, value] of Object.entries(json as Record<string, unknown>)) {
    if (key === 'permissive') {
      if (typeof value !== 'boolean') return { ok: false, error: "'permissive' must be true or false" };
      permissive = value;
      continue;
    }
    if (!(key in ACL_OBJECT_FIELDS)) return { ok: false, error: `'${key.slice(0, 64)}' is not an action Drydock knows (one of: permissive, ${ACL_ACTIONS.join(', ')})` };
    const action = key as AclAction;
    if (!Array.isArray(value)) return { ok: false, error: `'${action}' must be a list of {principals, ${ACL_OBJECT_FIELDS[action]}} entries` };
    const list: Entry[] = [];
    for (const [i, raw] of value.entries()) {
      const at = `${action}[${i}]`;
      if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { ok: false, error: `${at} must be an object` };
      const field = ACL_OBJECT_FIELDS[action];
      for (const k of Object.keys(raw)) if (k !== 'principals' && k !== field) return { ok: false, error: `${at}.${k.slice(0, 64)} is not a field of ${action} (principals, ${field})` };
      const principals = entity((raw as Record<string, unknown>)['principals'], `${at}.principals`, false);
      if (!principals.ok) return principals;
      const object = entity((raw as Record<string, unknown>)[field], `${at}.${field}`, field === 'agents' || field === 'machines');
      if (!object.ok) return object;
      list.push({ principals: principals.value, object: object.value });
    }
    count += list.length;
    entries.set(action, list);
  }
  return { ok: true, value: { permissive, entries, count } };
}

function entity(raw: unknown, at: string, machines: boolean): Parsed<Entity> {
  if (raw === undefined) return { ok: false, error: `${at} is missing` };
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { ok: false, error: `${at} must be {"values": [...]} or {"type": "ANY"|"NONE"}` };
  const r = raw as Record<string, unknown>;
  for (const k of Object.keys(r)) if (k !== 'values' && k !== 'type') return { ok: false, error: `${at}.${k.slice(0, 64)} is not an entity field (values, type)` };
  const type = r['type'];
  const values = r['values'];
  if (type !== undefined && values !== undefined && type !== 'SOME') return { ok: false, error: `${at} gives both type ${String(type)} and values` };
  if (values === undefined) {
    if (type === 'ANY') return { ok: true, value: { kind: 'ANY' } };
    if (type === 'NONE') return { ok: true, value: { kind: 'NONE' } };
    return { ok: false, error: `${at}.type must be ANY or NONE (or give values)` };
  }
  if (!Array.isArray(values) || values.length === 0) return { ok: false, error: `${at}.values must be a non-empty list of strings` };
  const names = new Set<string>();
  const matchers: Matcher[] = [];
  for (const [i, v] of values.entries()) {
    if (typeof v !== 'string' || v === '') return { ok: false, error: `${at}.values[${i}] must be a non-empty string` };
    names.add(v);
    if (machines) {
      const m = machineMatcher(v);
      if (!m.ok) return { ok: false, error: `${at}.values[${i}]: ${m.error}` };
      matchers.push(m.value);
    }
  }
  return { ok: true, value: { kind: 'SOME', names, machines: matchers } };
}

/** `hostname:GLOB`, `ip:GLOB`, `id:ID`, `ATTR:GLOB`, or a bare hostname GLOB. */
function machineMatcher(value: string): Parsed<Matcher> {
  const colon = value.indexOf(':');
  const key = colon === -1 ? 'hostname' : value.slice(0, colon);
  const pattern = colon === -1 ? value : value.slice(colon + 1);
  if (key === '' || pattern === '') return { ok: false, error: `'${value.slice(0, 80)}' must be KEY:PATTERN (hostname:web-*, ip:10.1.*, id:AGENT_ID, rack:r1) or a hostname pattern` };
  if (key === 'id') return { ok: true, value: (o) => o.agentId === pattern };
  if (key === 'hostname') {
    const re = glob(pattern, true);
    return { ok: true, value: (o) => o.hostname !== undefined && re.test(o.hostname) };
  }
  if (key === 'ip') {
    const re = glob(pattern, false);
    return { ok: true, value: (o) => o.ip !== undefined && re.test(o.ip) };
  }
  const re = glob(pattern, false);
  return {
    ok: true,
    value: (o) => {
      const v = o.attributes?.[key];
      return v !== undefined && re.test(v);
    },
  };
}

function glob(pattern: string, ignoreCase: boolean): RegExp {
  const body = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${body}$`, ignoreCase ? 'i' : '');
}

// ---- Decisions -------------------------------------------------------------------------------

/** Whether an entity matches the request's subject or object (Mesos' match matrix). */
function matches(e: Entity, value: AclObject): boolean {
  if (e.kind !== 'SOME') return true;
  if (value === undefined) return false;
  if (typeof value === 'string') return e.names.has(value);
  for (const m of e.machines) if (m(value)) return true;
  return false;
}

/** Whether a matching entity allows (Mesos' allow matrix): NONE never, ANY always, SOME when it matches. */
function allows(e: Entity, value: AclObject): boolean {
  if (e.kind === 'NONE') return false;
  if (e.kind === 'ANY') return true;
  return matches(e, value);
}

/** Decides one object against the entries whose principals already match. Pure. */
function decide(entries: readonly Entry[], principalAllowed: readonly boolean[], object: AclObject, permissive: boolean): boolean {
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i] as Entry;
    if (matches(e.object, object)) return (principalAllowed[i] as boolean) && allows(e.object, object);
  }
  return permissive;
}

/** Answers "may this principal do this to that". Without ACLs every answer is yes. */
export class Authorizer {
  readonly #acls: Acls | undefined;
  /** (action, principal) -> the entries whose principals match it, in order: asked once per pair. */
  readonly #byPrincipal = new Map<string, { entries: Entry[]; allowed: boolean[] }>();

  constructor(acls: Acls | undefined) {
    this.#acls = acls;
  }

  /** Whether ACLs were given (without them nothing is filtered). */
  get enabled(): boolean {
    return this.#acls !== undefined;
  }

  /** Whether `principal` (undefined: anonymous) may do `action` to `object` (undefined: unknown). */
  allows(action: AclAction, principal: string | undefined, object: AclObject): boolean {
    return this.approver(action, principal)(object);
  }

  /** A decision function for many objects of one action and principal (filtering views). */
  approver(action: AclAction, principal: string | undefined): (object: AclObject) => boolean {
    const acls = this.#acls;
    if (acls === undefined) return () => true;
    const key = `${action}\u0000${principal ?? ''}\u0000${principal === undefined ? 'anon' : 'p'}`;
    let pre = this.#byPrincipal.get(key);
    if (pre === undefined) {
      const entries: Entry[] = [];
      const allowed: boolean[] = [];
      for (const e of acls.entries.get(action) ?? []) {
        if (!matches(e.principals, principal)) continue;
        entries.push(e);
        allowed.push(allows(e.principals, principal));
      }
      pre = { entries, allowed };
      if (this.#byPrincipal.size >= 65_536) this.#byPrincipal.clear();
      this.#byPrincipal.set(key, pre);
    }
    const { entries, allowed } = pre;
    const permissive = acls.permissive && !DENIED_UNLESS_GRANTED.has(action);
    return (object) => decide(entries, allowed, object, permissive);
  }
}

/** The attributes of an agent as ACL values: TEXT and SCALAR ones, by name. */
export function attributeValues(attributes: ReadonlyArray<{ name: string; type?: string; text?: { value: string }; scalar?: { value: number } }> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const a of attributes ?? []) {
    if (a.text !== undefined) out[a.name] = a.text.value;
    else if (a.scalar !== undefined) out[a.name] = String(a.scalar.value);
  }
  return out;
}

/** An ACL object in words, for 403s and audit lines. */
export function describeObject(o: AclObject): string {
  if (o === undefined) return '';
  if (typeof o === 'string') return `'${o}'`;
  return describeMachine(o);
}

function describeMachine(o: MachineObject): string {
  const where = o.hostname !== undefined && o.ip !== undefined ? `${o.hostname} (${o.ip})` : (o.hostname ?? (o.ip === undefined ? '' : `(${o.ip})`));
  if (o.agentId !== undefined) return where === '' ? `agent ${o.agentId}` : `agent ${o.agentId} on ${where}`;
  return `machine ${where}`;
}
