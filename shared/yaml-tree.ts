/**
 * Operator-written YAML (or JSON, which is YAML too) read safely into a small plain tree, and the
 * wording helpers its checkers share. Pure and total: text in, a tree or error lines out, never a
 * throw. The guards: a size cap, a nesting estimate run before the parser, duplicate keys
 * refused, aliases counted as they expand, one document only, YAML 1.2 core schema. Both the
 * service spec (scheduler/spec.ts) and the master's maintenance plan spec read YAML through here,
 * so neither imports the other's layer (layering.test.ts forbids that).
 */
import { LineCounter, isAlias, isMap, isScalar, isSeq, parseAllDocuments, visit, type Alias } from 'yaml';

/** Limits of one read. Every field has a default sized for specs an operator writes by hand. */
export interface YamlLimits {
  /** Longest text accepted, in characters (default 256 Ki: about a second of parser work on hostile text). */
  readonly maxChars: number;
  /**
   * Alias expansions (`*name`) allowed, each use counted (default 50): enough to share a value,
   * far too few for an alias bomb ("billion laughs") to grow. The `yaml` package's own
   * `maxAliasCount` only guards `toJS()`, and we walk the document ourselves.
   */
  readonly maxAliases: number;
  /** Deepest nesting of collections read (default 32). */
  readonly maxDepth: number;
  /** Values (scalars, lists, mappings, aliases expanded) in one document (default 100,000). */
  readonly maxValues: number;
}

export const DEFAULT_YAML_LIMITS: YamlLimits = Object.freeze({ maxChars: 256 * 1024, maxAliases: 50, maxDepth: 32, maxValues: 100_000 });

/** Errors reported for one document; the rest are counted in a last line. */
export const MAX_ERRORS = 50;

/**
 * A YAML value after parsing, aliases expanded. Scalars keep the text they were written with, so
 * `version: 1.10` can be read as "1.10", not 1.1.
 */
export type YamlValue =
  | { readonly kind: 'map'; readonly entries: readonly YamlEntry[] }
  | { readonly kind: 'seq'; readonly items: readonly YamlValue[] }
  | { readonly kind: 'scalar'; readonly value: string | number | boolean | null; readonly text: string };
export interface YamlEntry {
  readonly key: string;
  readonly value: YamlValue;
}
export type YamlMap = Extract<YamlValue, { kind: 'map' }>;

const NULL: YamlValue = { kind: 'scalar', value: null, text: '' };

export type YamlRead = { ok: true; value: YamlValue } | { ok: false; errors: string[] };

/** How one read words its refusals. Every field is optional. */
export interface YamlReadOptions {
  /** The refusal of a document with nothing in it (default `<what> is empty`), so a caller can say what it expected. */
  readonly empty?: string;
}

/** Cuts `s` to `max` characters unless the options say to quote whole. */
type Cut = (s: string, max: number) => string;

/**
 * Reads one YAML 1.2 document into a tree. Refuses text over the size cap, text that may nest
 * deeper than the parser survives, syntax errors and warnings (an unknown tag), more than one
 * document, `%YAML` versions other than 1.2, keys that are not plain strings, duplicate keys and
 * alias bombs. `what` names the document in messages ("the spec", "the plan"). Never throws.
 */
export function readYaml(text: string, what: string, limits: YamlLimits = DEFAULT_YAML_LIMITS, options: YamlReadOptions = {}): YamlRead {
  // Messages never quote the input whole: long text is cut (the parser's at 300 characters,
  // alias names at 40, a thrown error's message at 200).
  const cut: Cut = clip;
  try {
    return readUnchecked(text, what, limits, options.empty ?? `${what} is empty`, cut);
  } catch (e) {
    // Nothing below should throw; if the YAML library does on some input, it is still an answer.
    return { ok: false, errors: [`${what} could not be read: ${e instanceof Error ? cut(e.message, 200) : 'unknown error'}`] };
  }
}

const refuse = (message: string): YamlRead => ({ ok: false, errors: [message] });

function readUnchecked(text: string, what: string, limits: YamlLimits, empty: string, cut: Cut): YamlRead {
  if (typeof text !== 'string') return refuse(`${what} must be text, got ${typeof text}`);
  if (text.length > limits.maxChars) return refuse(`${what} is ${text.length} characters long; at most ${limits.maxChars} are accepted`);
  const deepLine = tooDeepLine(text);
  if (deepLine !== undefined) return refuse(`line ${deepLine} nests more than ${MAX_NESTING_ESTIMATE} levels deep (counting indentation, '- ' and brackets)`);
  const lines = new LineCounter();
  const docs = parseAllDocuments(text, {
    version: '1.2',
    schema: 'core',
    // Keys are names; `0:` and `"0":` are the same key, and a list as a key is an error.
    stringKeys: true,
    // Duplicate keys are refused, but by the lowering below: the library compares each key with
    // every earlier one, minutes of work for a mapping of 100,000 keys.
    uniqueKeys: false,
    // YAML 1.1 merge keys (`<<: *base`) are not in YAML 1.2; they would be an unknown key.
    merge: false,
    strict: true,
    prettyErrors: false,
    lineCounter: lines,
  });
  if (!Array.isArray(docs) || docs.length === 0) return refuse(empty);
  if (docs.length > 1) return refuse(`${what} must be one YAML document, got ${docs.length} (separated by ---)`);
  const doc = docs[0];
  if (doc === undefined) return refuse(empty);

  // Syntax errors and warnings end the read: checking a half-parsed tree would only add confusing
  // errors. One line per problem; deep nesting makes the parser report exhaustion once per level.
  const problems = new ErrorList();
  const seen = new Set<string>();
  for (const e of [...doc.errors, ...doc.warnings]) {
    const pos = lines.linePos(e.pos[0]);
    const message = `line ${pos.line}, column ${pos.col}: ${cut(e.message, 300)}`;
    const key = e.code === 'RESOURCE_EXHAUSTION' ? e.code : message;
    if (seen.has(key)) continue;
    seen.add(key);
    problems.add(message);
  }
  if (problems.any()) return { ok: false, errors: problems.list() };
  const version = doc.directives?.yaml;
  if (version?.explicit === true && version.version !== '1.2') {
    return refuse(`%YAML ${version.version} is not accepted: ${what} is read as YAML 1.2 (where yes and no are strings)`);
  }
  const lowering = new Lowering(doc, lines, limits, what, cut);
  let root: YamlValue;
  try {
    root = lowering.lower(doc.contents, 0);
  } catch (e) {
    if (e instanceof LowerError) return refuse(e.message);
    throw e;
  }
  if (lowering.duplicates.any()) return { ok: false, errors: lowering.duplicates.list() };
  return { ok: true, value: root };
}

/**
 * The `yaml` package composes nested collections recursively. Near the stack's end V8 may have
 * to compile one of its regular expressions, and a regexp compile that runs out of stack kills
 * the process ("RegExpCompiler Allocation failed", seen with `'- '.repeat(50_000)`) instead of
 * throwing. So text that might nest that deep never reaches the parser.
 */
const MAX_NESTING_ESTIMATE = 100;

/**
 * The first line (1-based) whose nesting may exceed MAX_NESTING_ESTIMATE, or undefined. An
 * estimate that errs high, without recursion: deeper indentations open above the line, plus its
 * longest run of `- ` / `? ` / `: ` indicators, plus brackets opened and not yet closed.
 */
function tooDeepLine(text: string): number | undefined {
  const indents: number[] = [];
  let flow = 0;
  let lineNo = 0;
  let i = 0;
  while (i <= text.length) {
    lineNo++;
    let end = text.indexOf('\n', i);
    if (end === -1) end = text.length;
    let p = i;
    while (p < end && (text[p] === ' ' || text[p] === '\t')) p++;
    if (p < end && text[p] !== '#' && text[p] !== '\r') {
      const indent = p - i;
      while (indents.length > 0 && (indents[indents.length - 1] ?? 0) >= indent) indents.pop();
      indents.push(indent);
      let run = 0;
      let longestRun = 0;
      let deepest = flow;
      for (let k = p; k < end; k++) {
        const c = text[k];
        if (c === ' ' || c === '\t') continue;
        const blankBefore = k === p || text[k - 1] === ' ' || text[k - 1] === '\t';
        const blankAfter = k + 1 === end || text[k + 1] === ' ' || text[k + 1] === '\t' || text[k + 1] === '\r';
        if ((c === '-' || c === '?' || c === ':') && blankBefore && blankAfter) {
          longestRun = Math.max(longestRun, ++run);
          continue;
        }
        run = 0;
        if (c === '[' || c === '{') deepest = Math.max(deepest, ++flow);
        else if ((c === ']' || c === '}') && flow > 0) flow--;
      }
      if (indents.length + longestRun + deepest > MAX_NESTING_ESTIMATE) return lineNo;
    }
    i = end + 1;
  }
  return undefined;
}

/** A limit hit while lowering: reported as the document's only error. */
class LowerError extends Error {}

/** Turns the library's node tree into `YamlValue`s, expanding aliases within the limits. */
class Lowering {
  /** For each alias, the node it names: the last node anchored with that name before it (YAML 1.2 §3.2.2.2). */
  readonly #targets = new Map<Alias, unknown>();
  readonly #lines: LineCounter;
  readonly #limits: YamlLimits;
  readonly #what: string;
  readonly #cut: Cut;
  #aliases = 0;
  #values = 0;
  /** Keys given twice in one mapping: YAML requires keys to be unique, and a silent "last wins" hides typos. */
  readonly duplicates = new ErrorList();

  constructor(doc: Parameters<typeof visit>[0], lines: LineCounter, limits: YamlLimits, what: string, cut: Cut) {
    this.#lines = lines;
    this.#limits = limits;
    this.#what = what;
    this.#cut = cut;
    const anchors = new Map<string, unknown>();
    // One walk in document order (`Alias.resolve` walks once per alias: N aliases, N walks).
    visit(doc, {
      Node: (_key, node) => {
        if (isAlias(node)) this.#targets.set(node, anchors.get(node.source));
        else if (typeof node.anchor === 'string') anchors.set(node.anchor, node);
      },
    });
  }

  lower(node: unknown, depth: number): YamlValue {
    if (++this.#values > this.#limits.maxValues) throw new LowerError(`${this.#what} has more than ${this.#limits.maxValues} values (counting what aliases repeat)`);
    if (node === null || node === undefined) return NULL;
    if (isAlias(node)) {
      if (++this.#aliases > this.#limits.maxAliases) throw new LowerError(`${this.#what} expands aliases more than ${this.#limits.maxAliases} times (a guard against alias bombs)`);
      const target = this.#targets.get(node);
      if (target === undefined) throw new LowerError(`alias *${this.#cut(node.source, 40)} names no anchor (&${this.#cut(node.source, 40)}) before it`);
      return this.lower(target, depth);
    }
    if (isScalar(node)) {
      const v = node.value;
      const text = typeof node.source === 'string' ? node.source : String(v);
      if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' || v === null) return { kind: 'scalar', value: v, text };
      // The core schema makes nothing else; anything that slips through is read as its text.
      return { kind: 'scalar', value: text, text };
    }
    if (depth >= this.#limits.maxDepth) throw new LowerError(`${this.#what} nests deeper than ${this.#limits.maxDepth} levels`);
    if (isMap(node)) {
      const entries: YamlEntry[] = [];
      const keys = new Set<string>();
      for (const pair of node.items) {
        const k: unknown = pair.key;
        // stringKeys makes every scalar key a string; an alias used as a key is not resolved by it.
        if (!isScalar(k) || typeof k.value !== 'string') throw new LowerError('mapping keys must be plain strings (an alias or a collection is not a key)');
        if (keys.has(k.value)) {
          const pos = this.#lines.linePos(k.range?.[0] ?? 0);
          this.duplicates.add(`line ${pos.line}, column ${pos.col}: key ${JSON.stringify(clip(k.value, 40))} appears twice in one mapping`);
          continue;
        }
        keys.add(k.value);
        entries.push({ key: k.value, value: this.lower(pair.value, depth + 1) });
      }
      return { kind: 'map', entries };
    }
    if (isSeq(node)) return { kind: 'seq', items: node.items.map((item) => this.lower(item, depth + 1)) };
    throw new LowerError(`${this.#what} holds a value of an unknown kind`);
  }
}

// ---------------------------------------------------------------------------------------------
// Wording shared by the checkers of a tree

/** Collects errors up to MAX_ERRORS and counts the rest, so a hostile document yields a bounded answer. */
export class ErrorList {
  readonly #list: string[] = [];
  #more = 0;
  add(message: string): void {
    if (this.#list.length < MAX_ERRORS) this.#list.push(message);
    else this.#more++;
  }
  any(): boolean {
    return this.#list.length > 0;
  }
  list(): string[] {
    return this.#more === 0 ? [...this.#list] : [...this.#list, `... and ${this.#more} more errors`];
  }
}

/** Cuts a string for a message, so a hostile megabyte never lands in a log line. */
export function clip(s: string, max = 60): string {
  return s.length <= max ? s : `${s.slice(0, max)}…`;
}

/** A path segment: names as they are, anything odd quoted (`machines."Hello World"`). */
function segment(key: string): string {
  return /^[A-Za-z0-9_-]{1,64}$/.test(key) ? key : JSON.stringify(clip(key, 40));
}

/** `path.key`, or `key` at the top. */
export function childPath(path: string, key: string): string {
  return path === '' ? segment(key) : `${path}.${segment(key)}`;
}

/** What was received, for "got …": strings quoted, other scalars as written, collections by kind. */
export function describe(v: YamlValue): string {
  if (v.kind === 'map') return 'a mapping';
  if (v.kind === 'seq') return 'a list';
  if (typeof v.value === 'string') return JSON.stringify(clip(v.value));
  if (v.value === null) return 'null';
  return clip(v.text);
}

/** Levenshtein distance, for "did you mean"; keys are short. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row.push(Math.min((prev[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1)));
    }
    prev = row;
  }
  return prev[b.length] ?? 0;
}

/** The known key nearest a typo, within two edits; the first of equals wins; long keys are not compared. */
export function closest(key: string, known: readonly string[]): string | undefined {
  if (key.length > 40) return undefined;
  let best: string | undefined;
  let bestDistance = 3;
  for (const k of known) {
    const d = distance(key.toLowerCase(), k);
    if (d < bestDistance) [best, bestDistance] = [k, d];
  }
  return best;
}

/** The value under `key`; an explicit null (`notice:` with nothing after it) counts as absent. */
export function field(map: YamlMap, key: string): YamlValue | undefined {
  const v = map.entries.find((e) => e.key === key)?.value;
  return v === undefined || (v.kind === 'scalar' && v.value === null) ? undefined : v;
}

/**
 * Every key of a mapping must be known; an unknown one is named, with the nearest known key if any.
 * Keys in `unsupported` (the SDK's, which Drydock does not run) are "not supported" instead.
 */
export function checkKeys(map: YamlMap, path: string, known: readonly string[], errors: ErrorList, unsupported: readonly string[] = []): void {
  for (const { key } of map.entries) {
    if (known.includes(key)) continue;
    const p = childPath(path, key);
    if (unsupported.includes(key)) {
      errors.add(`${p} is not supported by Drydock`);
      continue;
    }
    const near = closest(key, known);
    errors.add(near === undefined ? `${p} is not a known key (expected ${known.join(', ')})` : `${p} is not a known key; did you mean ${near}?`);
  }
}
