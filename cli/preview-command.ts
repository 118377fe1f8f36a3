/**
 * The `--dry-run` shell of the master commands (`drydock agent drain --dry-run`, `drydock machine
 * down --dry-run`): asks the master's impact preview and prints what preview.ts makes of it.
 * `drydock maintenance plan create --dry-run` asks it through the plan commands' shell
 * (plan-command.ts), with the same printing.
 */

import type { MasterClient } from './client.js';
import { PREVIEW_PATH, previewPrinted } from './preview.js';
import { accessRefusal, oneLine, type Printed } from './service-api.js';
import { EXIT_FAILED } from './exit-codes.js';

/** Where the lines go: stdout lines, stderr lines (the shell adds `drydock: `). */
export interface PreviewIo {
  out(line: string): void;
  err(line: string): void;
}

/**
 * A preview answer that is not 200, put to the operator: 401/403 with their own status, a master
 * without the preview (404, older than this CLI) said so, anything else as the master's message.
 */
export function previewFailure(status: number, body: string, credential: string | undefined): Printed {
  const refused = accessRefusal('master', status, body, credential);
  if (refused !== undefined) return refused;
  if (status === 404) return { exitCode: EXIT_FAILED, out: [], err: [`the master has no impact preview (POST ${PREVIEW_PATH} answered 404): it is older than this drydock; nothing was changed`] };
  return { exitCode: EXIT_FAILED, out: [], err: [`master answered ${status} to the preview: ${oneLine(body.trim())}`] };
}

/** Asks the preview of one action (`{"drain_agent": ...}`) and prints it; the exit status. */
export async function previewAction(client: MasterClient, action: Record<string, unknown>, json: boolean, what: string, io: PreviewIo): Promise<number> {
  const answer = await client.post(PREVIEW_PATH, action);
  const printed = previewPrinted(answer.status, answer.body, json, what) ?? previewFailure(answer.status, answer.body, client.credential);
  for (const line of printed.out) io.out(line);
  for (const line of printed.err) io.err(line);
  return printed.exitCode;
}
