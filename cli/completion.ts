/**
 * Shell completion for bash and zsh, generated from the commander program itself (its commands,
 * aliases, options and argument choices), so a new command or flag completes without anyone
 * editing a script. `commandSpec` reads the program into plain data; `bashScript` and
 * `zshScript` write that data as shell functions. Both are pure; `drydock completion` prints.
 *
 * The scripts walk the words typed so far: a word that names a subcommand (or its alias) of the
 * command reached so far descends into it; an option that takes a value skips the word after it.
 * At a word starting with `-` they offer the options of that command and the program's (which
 * commander accepts after a subcommand too); elsewhere its subcommands and its argument's
 * choices; after an option that takes a value, file names.
 */

import type { Command } from 'commander';

/** One option: its spellings and whether it takes a value (`--master <host:port>`). */
export interface OptionSpec {
  readonly flags: readonly string[];
  readonly takesValue: boolean;
  readonly description: string;
}

/** One command, as completion sees it. */
export interface CommandSpec {
  readonly name: string;
  readonly aliases: readonly string[];
  readonly description: string;
  readonly options: readonly OptionSpec[];
  /** The choices of its first argument with any (`completion <shell>`: bash, zsh). */
  readonly argChoices: readonly string[];
  readonly commands: readonly CommandSpec[];
}

/** The help flags commander adds to every command without listing them in `options`. */
const HELP: OptionSpec = { flags: ['-h', '--help'], takesValue: false, description: 'display help for command' };

/** The program (or a command) as plain data, depth first. */
export function commandSpec(cmd: Command): CommandSpec {
  const options: OptionSpec[] = cmd.options.map((o) => ({
    flags: [o.short, o.long].filter((f): f is string => f !== undefined && f !== ''),
    takesValue: o.required || o.optional,
    description: o.description,
  }));
  if (!options.some((o) => o.flags.includes('--help'))) options.push(HELP);
  const args = cmd.registeredArguments.find((a) => (a.argChoices ?? []).length > 0);
  return {
    name: cmd.name(),
    aliases: cmd.aliases(),
    description: cmd.description(),
    options,
    argChoices: [...(args?.argChoices ?? [])],
    commands: cmd.commands.map(commandSpec),
  };
}

/** Every command below the root with its path (`maintenance plan show`), the root as ''. */
export function commandPaths(root: CommandSpec): Array<{ path: string; spec: CommandSpec }> {
  const out: Array<{ path: string; spec: CommandSpec }> = [];
  const walk = (spec: CommandSpec, path: string): void => {
    out.push({ path, spec });
    for (const c of spec.commands) walk(c, path === '' ? c.name : `${path} ${c.name}`);
  };
  walk(root, '');
  return out;
}

/** The leaf commands (those without subcommands), with their paths: what the operator runs. */
export function leafCommands(root: CommandSpec): Array<{ path: string; spec: CommandSpec }> {
  return commandPaths(root).filter((c) => c.path !== '' && c.spec.commands.length === 0);
}

/** A word in single quotes for sh, bash and zsh (names here are plain, but a quote must not end the script). */
function quote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** A case label for a key that may be empty. */
function label(key: string): string {
  return quote(key);
}

/**
 * The helper functions both shells share (POSIX `case`, so bash and zsh read them alike):
 * `_<fn>_canon PATH WORD` echoes the subcommand WORD names under PATH (an alias gives its
 * command's name); `_<fn>_subs`, `_<fn>_opts`, `_<fn>_args` list what completes at PATH;
 * `_<fn>_value PATH FLAG` succeeds when FLAG takes a value there (or in the program).
 */
function helpers(fn: string, root: CommandSpec): string {
  const all = commandPaths(root);
  const canon: string[] = [];
  const subs: string[] = [];
  const opts: string[] = [];
  const args: string[] = [];
  const values: string[] = [];
  for (const { path, spec } of all) {
    for (const c of spec.commands) for (const n of [c.name, ...c.aliases]) canon.push(`    ${label(`${path}|${n}`)}) echo ${quote(c.name)} ;;`);
    const names = spec.commands.flatMap((c) => [c.name, ...c.aliases]);
    if (names.length > 0) subs.push(`    ${label(path)}) echo ${quote(names.join(' '))} ;;`);
    opts.push(`    ${label(path)}) echo ${quote(spec.options.flatMap((o) => o.flags.filter((f) => f.startsWith('--'))).join(' '))} ;;`);
    if (spec.argChoices.length > 0) args.push(`    ${label(path)}) echo ${quote(spec.argChoices.join(' '))} ;;`);
    const takes = spec.options.filter((o) => o.takesValue).flatMap((o) => o.flags);
    if (takes.length > 0) values.push(`    ${label(path)}) case "$2" in ${takes.map(quote).join('|')}) return 0 ;; esac ;;`);
  }
  const rootValues = root.options.filter((o) => o.takesValue).flatMap((o) => o.flags);
  return [
    `_${fn}_canon() {`, '  case "$1|$2" in', ...canon, '  esac', '}',
    `_${fn}_subs() {`, '  case "$1" in', ...subs, '  esac', '}',
    `_${fn}_opts() {`, '  case "$1" in', ...opts, '  esac', '}',
    `_${fn}_args() {`, '  case "$1" in', ...args, '  esac', '}',
    `_${fn}_value() {`,
    `  case "$2" in ${rootValues.length > 0 ? rootValues.map(quote).join('|') : "''"}) return 0 ;; esac`,
    '  case "$1" in', ...values, '  esac', '  return 1', '}',
  ].join('\n');
}

/**
 * The start of both completion functions: the word under the cursor, and the canonical command
 * path of the words before it (options and their values skipped). bash and zsh differ only in
 * the array, the cursor's variable, and where the words after the command start.
 */
function walkWords(fn: string, words: string, cursor: string, first: number): string {
  return `  local cur="\${${words}[${cursor}]}" cmdpath="" w next i skip=0
  for ((i = ${first}; i < ${cursor}; i++)); do
    w="\${${words}[i]}"
    if ((skip)); then skip=0; continue; fi
    case "$w" in
      --*=*) continue ;;
      -*) _${fn}_value "$cmdpath" "$w" && skip=1; continue ;;
    esac
    next="$(_${fn}_canon "$cmdpath" "$w")"
    if [[ -n "$next" ]]; then cmdpath="\${cmdpath:+$cmdpath }$next"; fi
  done
`;
}

/** The bash script: `source <(drydock completion bash)`, or save it in bash-completion's directory. */
export function bashScript(root: CommandSpec): string {
  const fn = root.name.replace(/[^A-Za-z0-9_]/g, '_');
  return `# bash completion for ${root.name}, generated by \`${root.name} completion bash\` from its commands:
# regenerate it after an upgrade. Load it with:  source <(${root.name} completion bash)
${helpers(fn, root)}
_${fn}() {
${walkWords(fn, 'COMP_WORDS', 'COMP_CWORD', 1)}  if ((skip)); then COMPREPLY=(); return 0; fi
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$(_${fn}_opts "$cmdpath") $(_${fn}_opts '')" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$(_${fn}_subs "$cmdpath") $(_${fn}_args "$cmdpath")" -- "$cur"))
  fi
  return 0
}
complete -o default -F _${fn} ${root.name}
`;
}

/**
 * The zsh script: save it as `_drydock` in a directory of $fpath (autoloaded, `#compdef`), or
 * `source <(drydock completion zsh)` after compinit.
 */
export function zshScript(root: CommandSpec): string {
  const fn = root.name.replace(/[^A-Za-z0-9_]/g, '_');
  // zsh: $path is the array tied to $PATH, so the command path is $cmdpath; words[1] is the command.
  return `#compdef ${root.name}
# zsh completion for ${root.name}, generated by \`${root.name} completion zsh\` from its commands:
# regenerate it after an upgrade. Save it as _${fn} in a directory of $fpath, or, after compinit:
#   source <(${root.name} completion zsh)
${helpers(fn, root)}
_${fn}() {
${walkWords(fn, 'words', 'CURRENT', 2)}  if ((skip)); then _files; return; fi
  if [[ "$cur" == -* ]]; then
    compadd -- \${=\$(_${fn}_opts "$cmdpath")} \${=\$(_${fn}_opts '')}
  else
    compadd -- \${=\$(_${fn}_subs "$cmdpath")} \${=\$(_${fn}_args "$cmdpath")}
  fi
}
if [[ "\${zsh_eval_context[-1]}" == loadautofunc ]]; then
  _${fn} "$@"
else
  compdef _${fn} ${root.name}
fi
`;
}
