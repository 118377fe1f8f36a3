/**
 * Which configuration is the target (plans.md §7.2): a new spec becomes the target, stored under
 * a fresh id, when it parses and `validateUpdate` allows the change from the current target;
 * otherwise the stored target stays and the errors are shown on the deploy plan. With no stored
 * target, an unusable spec is fatal: there is nothing to run.
 */
import { randomUUID } from 'node:crypto';
import { parseServiceSpec } from './spec.js';
import { validateUpdate } from './spec-changes.js';
import { specEquals, specFromJson, specJson } from './spec-shape.js';
import type { ServiceSpec } from './spec-types.js';
import type { StateStore } from './state.js';

export type TargetChoice =
  | { readonly kind: 'fatal'; readonly errors: readonly string[] }
  | {
      readonly kind: 'ok';
      readonly spec: ServiceSpec;
      readonly configId: string;
      /** Why the spec given did not become the target (empty when it did, or was already). */
      readonly errors: readonly string[];
      readonly configOf: (id: string) => ServiceSpec | undefined;
    };

/** The spec text (or why it could not be read) against the stored target. Writes a new target before answering. */
export function chooseTarget(store: StateStore, text: string | { ok: false; errors: readonly string[] }, nowMs: number): TargetChoice {
  const cache = new Map<string, ServiceSpec | undefined>();
  const configOf = (id: string): ServiceSpec | undefined => {
    if (!cache.has(id)) {
      const raw = store.config(id);
      const parsed = raw === undefined ? undefined : specFromJson(raw);
      cache.set(id, parsed?.ok === true ? parsed.spec : undefined);
    }
    return cache.get(id);
  };
  const targetId = store.targetConfigId();
  const target = targetId === undefined ? undefined : configOf(targetId);
  const parsed = typeof text === 'string' ? parseServiceSpec(text) : text;
  const keep = (errors: readonly string[]): TargetChoice =>
    target === undefined || targetId === undefined
      ? { kind: 'fatal', errors: targetId === undefined ? errors : [`the stored target configuration ${targetId} is unreadable`, ...errors] }
      : { kind: 'ok', spec: target, configId: targetId, errors, configOf };
  if (!parsed.ok) return keep(parsed.errors.map((e) => `spec: ${e}`));
  if (target !== undefined && targetId !== undefined) {
    if (specEquals(target, parsed.spec)) return { kind: 'ok', spec: target, configId: targetId, errors: [], configOf };
    const refused = validateUpdate(target, parsed.spec);
    if (refused.length > 0) return keep(refused.map((e) => `spec update refused: ${e}`));
  }
  const id = randomUUID();
  store.setTarget(id, specJson(parsed.spec), nowMs);
  store.pruneConfigs();
  cache.set(id, parsed.spec);
  return { kind: 'ok', spec: parsed.spec, configId: id, errors: [], configOf };
}
