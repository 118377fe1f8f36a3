/**
 * Leadership: whether this master may run a term. One interface, two implementations: solo
 * (one master with its SQLite file: it wins at start and never loses) and, with HA, etcd
 * (campaign, epoch, self-fencing; reference/etcd.md). The process (main.ts) starts a term
 * when elected and disposes of it when deposed.
 */

export interface Leadership {
  /** Resolves when this master leads, with the term's epoch (1 for solo; etcd: the election key's create_revision). */
  campaign(): Promise<{ epoch: bigint }>;
  /** Calls `fn` once when leadership is lost (never for solo). */
  onLost(fn: (reason: string) => void): void;
  /** Gives leadership up (SIGTERM on a leader), so a standby can take over at once. */
  resign(): Promise<void>;
}

/** One master, no election: it leads from its start until it stops. */
export class SoloLeadership implements Leadership {
  campaign(): Promise<{ epoch: bigint }> {
    return Promise.resolve({ epoch: 1n });
  }

  onLost(_fn: (reason: string) => void): void {
    // Nothing to lose.
  }

  resign(): Promise<void> {
    return Promise.resolve();
  }
}
