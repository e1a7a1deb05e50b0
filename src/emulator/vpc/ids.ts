// Identifiers in EC2's shapes (eni-…, i-…, eni-attach-…, MACs, request IDs) from an injectable
// random source, so a seeded emulator produces the same IDs on every run.

export type RandomSource = () => number;

export class IdSource {
  readonly #random: RandomSource;
  readonly #issued = new Set<string>();

  constructor(random: RandomSource) {
    this.#random = random;
  }

  hex(digits: number): string {
    let out = '';
    for (let i = 0; i < digits; i++) out += Math.floor(this.#random() * 16).toString(16);
    return out;
  }

  /** A fresh `${prefix}${17 hex}` never issued before by this source. */
  unique(prefix: string): string {
    for (;;) {
      const id = `${prefix}${this.hex(17)}`;
      if (!this.#issued.has(id)) {
        this.#issued.add(id);
        return id;
      }
    }
  }

  /** Locally administered unicast MAC, as EC2 gives ENIs (02:…). */
  mac(): string {
    for (;;) {
      const octets = ['02'];
      for (let i = 0; i < 5; i++) octets.push(this.hex(2));
      const mac = octets.join(':');
      if (!this.#issued.has(mac)) {
        this.#issued.add(mac);
        return mac;
      }
    }
  }

  requestId(): string {
    return [this.hex(8), this.hex(4), `4${this.hex(3)}`, `a${this.hex(3)}`, this.hex(12)].join('-');
  }
}

/** mulberry32: a small deterministic generator for tests and reproducible labs. */
export function seededRandom(seed: number): RandomSource {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
