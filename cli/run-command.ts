/**
 * `drydock run`'s shell: subscribes as a framework, takes one matching offer, launches one
 * task, prints and acknowledges its updates, and resolves with the exit status once the task
 * is terminal (after TEARDOWN). Every decision is made in run.ts; this file only carries
 * events, calls, timers and signals.
 */

import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import { SchedulerClient, SubscribeError, type SchedulerEvent } from '../scheduler/client.js';
import {
  chooseOffer,
  describeRequest,
  formatUpdate,
  isTerminalState,
  runFramework,
  runOutcome,
  runTaskInfo,
  type OfferJson,
  type RunRequest,
  type StatusJson,
} from './run.js';
import type { TaskInfo } from '../shared/mesos.js';
import { EXIT_INTERRUPTED, terminalIo, type TerminalIo } from './terminal.js';
import { EXIT_RUN_FAILED } from './exit-codes.js';
import { ANONYMOUS_ACCESS, type ClientAccess } from '../io/client-auth.js';
import { accessRefusal } from './service-api.js';

/** How long declined offers stay away: short while we still look (so we do not starve), long once launched. */
const REFUSE_WHILE_LOOKING_S = 1;
const REFUSE_AFTER_LAUNCH_S = 3600;

/** Where `drydock run` writes: updates to stdout, everything else to stderr. */
export const processIo: TerminalIo = terminalIo('drydock run');

function currentUser(): string {
  try {
    return userInfo().username;
  } catch {
    return 'root';
  }
}

/** How `drydock run` reaches the master: its credential and TLS, and http or https. */
export interface RunConnection {
  readonly access: ClientAccess;
  readonly scheme: 'http' | 'https';
  /**
   * When no offer came: what the master knows that explains it, a line each (agents under disk
   * pressure, whose resources it does not offer); never rejects. None: nothing more is said.
   */
  readonly explainNoOffer?: (hostname: string | undefined) => Promise<string[]>;
}

/**
 * Runs one task to its end; resolves with the CLI's exit status (never rejects). With a
 * credential the framework names its principal (FrameworkInfo.principal), as the master checks.
 */
export async function runCommand(master: string, req: RunRequest, conn: RunConnection = { access: ANONYMOUS_ACCESS, scheme: 'http' }, io: TerminalIo = processIo): Promise<number> {
  let client: SchedulerClient;
  const framework = runFramework(req, currentUser());
  const principal = conn.access.principal;
  try {
    client = await SchedulerClient.subscribe(`${conn.scheme}://${master}`, { ...framework, ...(principal === undefined ? {} : { principal }) }, { timeoutMs: 15_000, transport: conn.access.transport });
  } catch (e) {
    if (!(e instanceof SubscribeError)) throw e;
    // 401 and 403 say what to do, as for every command; the status is run's own failure (125),
    // as 3 and 4 may be a task's.
    const refused = accessRefusal('master', e.status, e.message, conn.access.credential);
    if (refused !== undefined) {
      for (const line of refused.err) io.err(line);
      return EXIT_RUN_FAILED;
    }
    io.err(e.status === 0 ? `${e.message}; set --master or DRYDOCK_MASTER` : `the master refused SUBSCRIBE (${e.status}): ${e.message}`);
    return EXIT_RUN_FAILED;
  }
  io.err(`subscribed as framework ${client.frameworkId}; waiting for an offer (${describeRequest(req)})`);
  return new Run(client, req, io, conn.explainNoOffer).result;
}

/** One run: its state is the task (once launched), the kill (once asked) and the end. */
class Run {
  readonly result: Promise<number>;
  readonly #client: SchedulerClient;
  readonly #req: RunRequest;
  readonly #io: TerminalIo;
  #resolve!: (code: number) => void;
  #task: TaskInfo | undefined;
  #done = false;
  #interrupts = 0;
  #killSent = false;
  /** Agent hostnames by agent id, from the offers, for the update lines. */
  readonly #hostnames = new Map<string, string>();
  /** Why offers did not fit, for the no-offer message. */
  readonly #mismatches = new Set<string>();
  /** Events are handled one at a time, in order, though handling awaits calls. */
  #chain: Promise<void> = Promise.resolve();
  readonly #offerTimer: NodeJS.Timeout;
  readonly #stopSignals: () => void;

  readonly #explainNoOffer: ((hostname: string | undefined) => Promise<string[]>) | undefined;

  constructor(client: SchedulerClient, req: RunRequest, io: TerminalIo, explainNoOffer?: (hostname: string | undefined) => Promise<string[]>) {
    this.#explainNoOffer = explainNoOffer;
    this.#client = client;
    this.#req = req;
    this.#io = io;
    this.result = new Promise((resolve) => (this.#resolve = resolve));
    this.#offerTimer = setTimeout(() => this.#offerTimeout(), req.offerTimeoutMs);
    this.#stopSignals = io.onSignal((sig) => this.#signal(sig));
    client.onEvent = (e) => {
      this.#chain = this.#chain.then(() => this.#handle(e)).catch((err: unknown) => this.#fail(err));
    };
    // Events that arrived between SUBSCRIBED and onEvent being set.
    for (const e of client.received.slice(1)) client.onEvent(e);
    void client.ended.then((reason) => {
      if (this.#done) return;
      this.#io.err(`lost the connection to the master (${reason})`);
      this.#end(EXIT_RUN_FAILED, false);
    });
  }

  async #handle(e: SchedulerEvent): Promise<void> {
    if (this.#done) return;
    switch (e.type) {
      case 'OFFERS':
        return this.#offers(((e['offers'] as { offers?: OfferJson[] } | undefined)?.offers) ?? []);
      case 'UPDATE':
        return this.#update(e, (e['update'] as { status: StatusJson }).status);
      case 'ERROR':
        this.#io.err(`the master sent ERROR: ${String((e['error'] as { message?: string } | undefined)?.message ?? '')}`);
        return this.#end(EXIT_RUN_FAILED, false);
      default:
        // HEARTBEAT, RESCIND (we hold no offer), FAILURE (an update follows), INVERSE_OFFERS.
        return;
    }
  }

  async #offers(offers: OfferJson[]): Promise<void> {
    for (const o of offers) this.#hostnames.set(o.agent_id.value, o.hostname);
    const looking = this.#task === undefined && this.#interrupts === 0;
    const choice = chooseOffer(offers, this.#req, looking);
    for (const m of choice.mismatches) this.#mismatches.add(m);
    const calls: Array<Promise<unknown>> = [];
    if (choice.decline.length > 0) {
      calls.push(
        this.#client.call('DECLINE', {
          offer_ids: choice.decline.map((o) => o.id),
          filters: { refuse_seconds: looking ? REFUSE_WHILE_LOOKING_S : REFUSE_AFTER_LAUNCH_S },
        }),
      );
    }
    const offer = choice.accept;
    if (offer !== undefined) {
      clearTimeout(this.#offerTimer);
      const task = runTaskInfo(this.#req, offer, randomBytes(3).toString('hex'));
      this.#task = task;
      this.#io.err(`launching task ${task.task_id.value} on ${offer.hostname}`);
      const accept = this.#client.call('ACCEPT', {
        offer_ids: [offer.id],
        operations: [{ type: 'LAUNCH', launch: { task_infos: [task] } }],
        filters: { refuse_seconds: REFUSE_AFTER_LAUNCH_S },
      });
      calls.push(
        accept.then((r) => {
          if (r.status !== 202) {
            this.#io.err(`the master refused ACCEPT (${r.status}): ${r.text.trim()}`);
            return this.#end(EXIT_RUN_FAILED, true);
          }
          return undefined;
        }),
      );
    }
    await Promise.all(calls);
  }

  async #update(event: SchedulerEvent, status: StatusJson): Promise<void> {
    const agentId = status.agent_id?.value;
    this.#io.out(this.#req.json ? JSON.stringify(event) : formatUpdate(status, agentId === undefined ? undefined : this.#hostnames.get(agentId), this.#io.nowMs() / 1000));
    if (status.uuid !== undefined && agentId !== undefined) {
      const r = await this.#client.call('ACKNOWLEDGE', { agent_id: { value: agentId }, task_id: status.task_id, uuid: status.uuid });
      if (r.status !== 202) this.#io.err(`the master refused ACKNOWLEDGE (${r.status}): ${r.text.trim()}`);
    }
    if (this.#task !== undefined && status.task_id.value === this.#task.task_id.value && isTerminalState(status.state)) {
      const outcome = runOutcome(status);
      if (outcome.problem !== undefined) this.#io.err(outcome.problem);
      await this.#end(outcome.exitCode, true);
    }
  }

  #offerTimeout(): void {
    if (this.#done || this.#task !== undefined) return;
    const seen = this.#mismatches.size > 0 ? `; offers seen: ${[...this.#mismatches].slice(0, 5).join('; ')}` : '; no offers at all';
    this.#io.err(`no offer matching ${describeRequest(this.#req)} within ${this.#req.offerTimeoutMs / 1000} s${seen}`);
    const explain = this.#explainNoOffer;
    this.#chain = this.#chain
      .then(async () => {
        if (explain === undefined) return;
        for (const line of await explain(this.#req.hostname).catch(() => [])) this.#io.err(line);
      })
      .then(() => this.#end(EXIT_RUN_FAILED, true));
  }

  #signal(sig: NodeJS.Signals): void {
    this.#interrupts++;
    if (this.#done) return;
    if (this.#interrupts > 1) {
      // Closing the stream ends the framework (failover_timeout 0): the master kills the task.
      this.#io.err(`${sig} again: exiting without waiting for the task`);
      void this.#end(EXIT_INTERRUPTED, false);
      return;
    }
    const task = this.#task;
    if (task === undefined) {
      this.#io.err(`${sig}: no task launched; tearing down`);
      this.#chain = this.#chain.then(() => this.#end(EXIT_INTERRUPTED, true));
      return;
    }
    if (this.#killSent) return;
    this.#killSent = true;
    this.#io.err(`${sig}: killing task ${task.task_id.value} (again to exit at once)`);
    void this.#client
      .call('KILL', { task_id: task.task_id, agent_id: task.agent_id })
      .then((r) => {
        if (r.status !== 202) this.#io.err(`the master refused KILL (${r.status}): ${r.text.trim()}`);
      })
      .catch((e: unknown) => this.#fail(e));
  }

  #fail(e: unknown): void {
    if (this.#done) return;
    const cause = (e as { cause?: { code?: string } }).cause?.code ?? (e as Error).message;
    this.#io.err(`lost the master: ${cause}`);
    void this.#end(EXIT_RUN_FAILED, false);
  }

  /** Ends the run once: TEARDOWN (unless the master is gone), close the stream, resolve. */
  async #end(code: number, teardown: boolean): Promise<void> {
    if (this.#done) return;
    this.#done = true;
    clearTimeout(this.#offerTimer);
    this.#stopSignals();
    if (teardown) {
      try {
        const r = await this.#client.call('TEARDOWN');
        if (r.status !== 202 && r.status !== 200) this.#io.err(`TEARDOWN answered ${r.status}: ${r.text.trim()}`);
      } catch {
        // The master is gone; with failover_timeout 0 the framework goes with the connection anyway.
      }
    }
    this.#client.close();
    this.#resolve(code);
  }
}
