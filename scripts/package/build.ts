/**
 * `npm run package`: builds the single executables (dist/sea/drydock-agent, dist/sea/drydock)
 * and the Debian packages (dist/deb/drydock-agent_<version>_amd64.deb and
 * dist/deb/drydock-master_<version>_amd64.deb). `npm run build` runs first (the launcher and
 * the compiled master come from dist/).
 *
 *   --out=DIR     where the packages go (default dist/deb)
 *   --sea-out=DIR where the single executables go (default dist/sea)
 *   --fast        gzip -1 instead of xz for the .deb members (the package test: same contents,
 *                 about a minute less on two cores)
 *   --no-cli      skip the single-file CLI (no package carries it)
 */

import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { statSync } from 'node:fs';
import { ROOT } from '../harness/daemon.js';
import { buildPackages } from './deb.js';

const { values } = parseArgs({
  options: { out: { type: 'string' }, 'sea-out': { type: 'string' }, fast: { type: 'boolean', default: false }, 'no-cli': { type: 'boolean', default: false } },
});
const outDir = values.out ?? join(ROOT, 'dist', 'deb');
const t0 = Date.now();
const b = await buildPackages({ outDir, ...(values['sea-out'] === undefined ? {} : { seaDir: values['sea-out'] }), compression: values.fast ? 'fast' : 'xz', cli: !values['no-cli'], log: (l) => process.stdout.write(`package: ${l}\n`) });
const mib = (p: string): string => `${(statSync(p).size / 2 ** 20).toFixed(1)} MiB`;
process.stdout.write(`package: ${b.agentSea.path} (${mib(b.agentSea.path)}, node ${b.agentSea.node})\n`);
if (b.cliSea !== undefined) process.stdout.write(`package: ${b.cliSea.path} (${mib(b.cliSea.path)})\n`);
process.stdout.write(`package: ${b.agentDeb} (${mib(b.agentDeb)})\npackage: ${b.masterDeb} (${mib(b.masterDeb)})\n`);
process.stdout.write(`package: Depends: ${b.depends.agent} (agent); ${b.depends.master} (master)\npackage: done in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
