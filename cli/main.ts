#!/usr/bin/env node
/**
 * drydock: the operator CLI. The commands are in program.ts; this parses the command line and
 * turns a master's refusal into its line and exit status (exit-codes.ts).
 */

import { program, sentCredential } from './program.js';
import { ApiError } from './client.js';
import { EXIT_FAILED } from './exit-codes.js';
import { accessRefusal } from './service-api.js';

// A reader that closed its end of the pipe (`drydock status | head -1`, `task logs | head`) has
// what it wanted: end quietly with 0, as if everything had been read, never with a stack trace.
// stderr's own EPIPE is ignored: there is nowhere to say anything, and the status stays the command's.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});
process.stderr.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code !== 'EPIPE') throw e;
});

// No top-level await: the single-file `drydock` (scripts/package/sea.ts) is one CommonJS script,
// where a top-level await cannot be.
async function main(): Promise<void> {
  try {
    await program.parseAsync(process.argv);
  } catch (e) {
    if (e instanceof ApiError) {
      // 401 and 403 say what to do and exit with their own status (service-api.ts).
      const refused = accessRefusal('master', e.status, e.message, sentCredential());
      if (refused !== undefined) {
        for (const line of refused.err) process.stderr.write(`drydock: ${line}\n`);
        process.exit(refused.exitCode);
      }
      process.stderr.write(`drydock: ${e.status === 0 ? '' : `master answered ${e.status}: `}${e.message}\n`);
      process.exit(EXIT_FAILED);
    }
    throw e;
  }
}

void main();
