/**
 * Plan statuses and how a parent's status follows from its children: an ordered rule table,
 * first match wins. The statuses keep the SDK's spellings so tools and habits transfer; WAITING
 * and IN_PROGRESS are display-only (interruption is a flag, never a stored status).
 */

/** The nine statuses, in the SDK's declared order. */
export const STATUSES = ['ERROR', 'WAITING', 'PENDING', 'PREPARED', 'STARTING', 'STARTED', 'COMPLETE', 'IN_PROGRESS', 'DELAYED'] as const;
export type Status = (typeof STATUSES)[number];

/** What a step may store; WAITING and IN_PROGRESS only ever come out of display and aggregation. */
export type StepStatus = Exclude<Status, 'WAITING' | 'IN_PROGRESS'>;

/** "Running": work was started and has not finished. PENDING, WAITING and DELAYED are not running. */
export function isRunning(status: Status): boolean {
  return status === 'PREPARED' || status === 'STARTING' || status === 'STARTED' || status === 'IN_PROGRESS';
}

/** What a parent knows when it computes its status. */
export interface AggregateInput {
  /** Display status of every child, in order. */
  readonly children: readonly Status[];
  /** Display status of the children its strategy would work on now, ignoring other plans' dirty assets. */
  readonly candidates: readonly Status[];
  /** Whether the parent or any descendant carries an error string. */
  readonly hasErrors: boolean;
  /** The parent's own interrupted flag (its strategy's). */
  readonly interrupted: boolean;
}

export interface AggregationRule {
  /** Stable name, used by the table test and in debug output. */
  readonly id: string;
  readonly when: (input: AggregateInput) => boolean;
  readonly status: Status;
}

const any = (xs: readonly Status[], ...ss: Status[]): boolean => xs.some((x) => ss.includes(x));
const all = (xs: readonly Status[], s: Status): boolean => xs.every((x) => x === s);

/**
 * The rules, first match wins. Rules 1 to 14 are the SDK's, in its order. Three of its cases fall
 * through to "unexpected state" or read wrong; Drydock decides them with three added rules, each
 * marked QUIRK with the case it settles:
 *
 * - parallel `[STARTING, PENDING]` reads PENDING in the SDK although work is in flight: here it is
 *   IN_PROGRESS (rule `started-and-pending`, before `pending`).
 * - `[COMPLETE, DELAYED]` ends in ERROR in the SDK: here it is DELAYED, the truth (waiting out a
 *   back-off), when nothing else is actionable (rule `delayed`).
 * - an interrupted step that is already STARTING or STARTED is not a candidate and not WAITING, so
 *   the SDK ends in ERROR: here its parent reads IN_PROGRESS, since its task is still coming up
 *   (rule `running-child`).
 *
 * ERROR is still the answer for a state no rule explains, so a new hole shows up instead of hiding.
 */
export const AGGREGATION_RULES: readonly AggregationRule[] = [
  { id: 'errors', when: (i) => i.hasErrors || any(i.children, 'ERROR'), status: 'ERROR' },
  { id: 'all-complete', when: (i) => all(i.children, 'COMPLETE'), status: 'COMPLETE' },
  { id: 'interrupted', when: (i) => i.interrupted, status: 'WAITING' },
  { id: 'all-delayed', when: (i) => all(i.candidates, 'DELAYED') && all(i.children, 'DELAYED'), status: 'DELAYED' },
  { id: 'prepared-child', when: (i) => any(i.children, 'PREPARED'), status: 'IN_PROGRESS' },
  { id: 'waiting-candidate', when: (i) => any(i.candidates, 'WAITING'), status: 'WAITING' },
  { id: 'in-progress-candidate', when: (i) => any(i.candidates, 'IN_PROGRESS'), status: 'IN_PROGRESS' },
  { id: 'some-complete-pending', when: (i) => any(i.children, 'COMPLETE') && any(i.candidates, 'PENDING'), status: 'IN_PROGRESS' },
  { id: 'some-complete-starting', when: (i) => any(i.children, 'COMPLETE') && any(i.candidates, 'STARTING'), status: 'IN_PROGRESS' },
  { id: 'some-complete-started', when: (i) => any(i.children, 'COMPLETE') && any(i.candidates, 'STARTED'), status: 'IN_PROGRESS' },
  // QUIRK (SDK row 12): a parallel parent with one step starting and one pending is in progress.
  { id: 'started-and-pending', when: (i) => any(i.candidates, 'PENDING') && any(i.candidates, 'STARTING', 'STARTED'), status: 'IN_PROGRESS' },
  { id: 'pending', when: (i) => any(i.candidates, 'PENDING'), status: 'PENDING' },
  { id: 'waiting-child', when: (i) => any(i.children, 'WAITING'), status: 'WAITING' },
  { id: 'starting', when: (i) => any(i.candidates, 'STARTING'), status: 'STARTING' },
  { id: 'started', when: (i) => any(i.candidates, 'STARTED'), status: 'STARTED' },
  // QUIRK (SDK row 16): the rest of the work is done or waits out a back-off.
  { id: 'delayed', when: (i) => any(i.candidates, 'DELAYED') || any(i.children, 'DELAYED'), status: 'DELAYED' },
  // QUIRK (SDK row 21): an interrupted step whose task is already coming up keeps its parent in progress.
  { id: 'running-child', when: (i) => any(i.children, 'STARTING', 'STARTED', 'IN_PROGRESS'), status: 'IN_PROGRESS' },
  { id: 'unexpected', when: () => true, status: 'ERROR' },
];

/** The status of a parent and the rule that decided it. */
export function aggregate(input: AggregateInput): { status: Status; rule: string } {
  for (const rule of AGGREGATION_RULES) if (rule.when(input)) return { status: rule.status, rule: rule.id };
  /* c8 ignore next: the last rule always matches */
  throw new Error('aggregation table has no fallback rule');
}
