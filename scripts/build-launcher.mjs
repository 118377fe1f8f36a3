// Compiles agent/launcher.c into dist/agent/drydock-launch (run by `npm run build`).
// A C compiler is already required by better-sqlite3's build, so this adds no new tool.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'agent', 'drydock-launch');
mkdirSync(dirname(out), { recursive: true });
const cc = process.env.CC ?? 'cc';
try {
  execFileSync(cc, ['-O2', '-Wall', '-Wextra', '-Werror', '-o', out, join(root, 'agent', 'launcher.c')], { stdio: 'inherit' });
} catch (e) {
  console.error(`build-launcher: '${cc}' could not compile agent/launcher.c (${e.message}). Install a C compiler (Debian: build-essential).`);
  process.exit(1);
}
