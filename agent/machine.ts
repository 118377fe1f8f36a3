/**
 * What the agent learns about its machine: primary IPv4, CPUs, memory and the size of the
 * work_dir filesystem. systeminformation is imported lazily: it is only needed when flags
 * leave something open, and loading it costs memory an idle agent should not pay.
 */

import { mkdirSync, statfsSync } from 'node:fs';
import { resolve, sep } from 'node:path';
/** Raw machine facts, before Mesos' system reservation is taken off. */
export interface MachineFacts {
  cpus: number;
  memBytes: number;
  diskBytes: number;
}

/** What the config stage needs from the machine; detection is lazy and only runs for flags left unset. */
export interface MachineProbe {
  primaryIpv4(): Promise<string>;
  facts(workDir: string): Promise<MachineFacts>;
}

let cachedIp: Promise<string> | undefined;

/** The machine, read with systeminformation. networkInterfaces costs ~70 ms per call, so its answer is cached. */
export const machineProbe: MachineProbe = {
  primaryIpv4() {
    cachedIp ??= (async () => {
      const si = (await import('systeminformation')).default;
      const raw = await si.networkInterfaces();
      const nics = Array.isArray(raw) ? raw : [raw];
      const usable = nics.filter((n) => !n.internal && n.ip4 !== '');
      const pick = usable.find((n) => n.default) ?? usable[0];
      return pick?.ip4 ?? '127.0.0.1';
    })();
    return cachedIp;
  },
  async facts(workDir) {
    const si = (await import('systeminformation')).default;
    const [cpu, mem, fs] = await Promise.all([si.cpu(), si.mem(), si.fsSize()]);
    mkdirSync(workDir, { recursive: true });
    const dir = resolve(workDir);
    // The filesystem holding work_dir is the mount with the longest prefix of it.
    const mount = fs
      .filter((f) => dir === f.mount || dir.startsWith(f.mount.endsWith(sep) ? f.mount : f.mount + sep))
      .sort((a, b) => b.mount.length - a.mount.length)[0];
    let diskBytes = mount?.size ?? 0;
    if (diskBytes <= 0) {
      const st = statfsSync(dir);
      diskBytes = st.blocks * st.bsize;
    }
    return { cpus: cpu.cores > 0 ? cpu.cores : 1, memBytes: mem.total, diskBytes };
  },
};
