// The spare runner gives way to runners that compute: a spare still starting is paused while any
// runner has work in flight, goes on when they are idle, is let go before a load takes it or the
// daemon ends it, and the runners are told which process that is (fake processes).
import { describe, expect, it } from "vitest";
import type { GpuProbe } from "../../src/backends/llamacpp/protocol.js";
import { SpareRunner, type SpareProcess } from "../../src/backends/llamacpp/spare-runner.js";

class FakeProcess implements SpareProcess {
  static next = 100;
  readonly pid = FakeProcess.next++;
  alive = true;
  ready = false;
  paused = false;
  readonly log: string[] = [];
  private end!: () => void;
  readonly exited = new Promise<void>((r) => (this.end = r));
  holdsDaemon(): void {}
  prepare(): void {
    this.log.push("prepare");
  }
  probe(): Promise<GpuProbe> {
    return Promise.resolve({ library: false, names: [], totalBytes: 0, freeBytes: 0 });
  }
  pause(stop: boolean): void {
    if (stop !== this.paused) this.log.push(stop ? "stop" : "cont");
    this.paused = stop;
  }
  async close(): Promise<void> {
    this.die();
  }
  async terminate(): Promise<void> {
    this.pause(false);
    this.log.push("term");
    this.die();
  }
  die(): void {
    this.alive = false;
    this.end();
  }
}

function spareRunner() {
  const made: FakeProcess[] = [];
  const told: Array<number | null> = [];
  let busy = false;
  const spares = new SpareRunner<FakeProcess>({
    enabled: true,
    busy: () => busy,
    spawn: () => {
      const p = new FakeProcess();
      made.push(p);
      return p;
    },
    changed: (pid) => told.push(pid),
  });
  return { spares, made, told, setBusy: (b: boolean) => (busy = b) };
}

describe("the spare gives way", () => {
  it("a spare still starting is paused while runners compute and goes on when they are idle", () => {
    const { spares, made, told } = spareRunner();
    spares.startCpuOnly();
    const s = made[0]!;
    expect(told).toEqual([s.pid]);
    spares.yieldTo(true);
    expect(s.paused).toBe(true);
    spares.yieldTo(true); // already paused: nothing more sent
    spares.yieldTo(false);
    expect(s.paused).toBe(false);
    expect(s.log).toEqual(["prepare", "stop", "cont"]);
  });

  it("a ready spare uses no CPU and is left alone", () => {
    const { spares, made } = spareRunner();
    spares.startCpuOnly();
    made[0]!.ready = true;
    spares.yieldTo(true);
    expect(made[0]!.log).toEqual(["prepare"]);
  });

  it("a load takes a paused spare running again, and runners are told there is none now", () => {
    const { spares, made, told } = spareRunner();
    spares.startCpuOnly();
    spares.yieldTo(true);
    const taken = spares.take(false);
    expect(taken).toBe(made[0]);
    expect(taken!.paused).toBe(false);
    expect(told).toEqual([made[0]!.pid, null]);
    expect(spares.pid).toBeNull();
    spares.yieldTo(true); // the taken process is a runner now: never paused as a spare
    expect(taken!.paused).toBe(false);
  });

  it("the daemon's end lets a paused spare go on before ending it; a spare that dies is forgotten", async () => {
    const { spares, made, told } = spareRunner();
    spares.startCpuOnly();
    spares.yieldTo(true);
    await spares.close();
    expect(made[0]!.log).toEqual(["prepare", "stop", "cont", "term"]);
    expect(told.at(-1)).toBeNull();

    const other = spareRunner();
    other.spares.startCpuOnly();
    other.made[0]!.die();
    await other.made[0]!.exited;
    await Promise.resolve();
    expect(other.spares.pid).toBeNull();
    expect(other.told).toEqual([other.made[0]!.pid, null]);
  });
});
