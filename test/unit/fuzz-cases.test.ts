// The fuzzer's own guarantees, without a daemon: a case number alone reproduces a case, the
// unmutated GGUF document is the generated file byte for byte, and no case can reach a registry
// other than 127.0.0.1:1.
import { beforeAll, describe, expect, it } from "vitest";
import { planCase, type CasePlan } from "../../scripts/fuzz/cases.js";
import { baseModel, serialize, type GgufDoc } from "../../scripts/fuzz/gguf-doc.js";
import { caseRng, Rng } from "../../scripts/fuzz/prng.js";
import { NOWHERE, type Fixtures } from "../../scripts/fuzz/routes.js";
import { fixtures } from "../../scripts/fuzz/target.js";

let doc: GgufDoc;
let fx: Fixtures;

beforeAll(async () => {
  const base = await baseModel();
  doc = base.doc;
  fx = await fixtures();
  // the document is the file: mutations start from exactly what make-test-model.ts writes
  expect(serialize(doc).bytes.equals(base.bytes)).toBe(true);
}, 60_000);

/** Everything a plan sends, as comparable text. */
function sent(p: CasePlan): string {
  return JSON.stringify(p.steps.map((s) => [s.label, s.req.method, s.req.path, s.req.headers, s.req.body?.toString("base64")]));
}

describe("PRNG", () => {
  it("is a function of (seed, stream): same numbers again, different for a neighbour stream or seed", () => {
    const draw = (r: Rng) => Array.from({ length: 8 }, () => r.u32());
    expect(draw(caseRng(1, 7))).toEqual(draw(caseRng(1, 7)));
    expect(draw(caseRng(1, 7))).not.toEqual(draw(caseRng(1, 8)));
    expect(draw(caseRng(1, 7))).not.toEqual(draw(caseRng(2, 7)));
    expect(draw(caseRng(1, 2 ** 32 + 7))).not.toEqual(draw(caseRng(1, 7)));
  });

  it("spreads its draws (each of 16 buckets within 20% of its share)", () => {
    const r = caseRng(3, 0);
    const buckets = new Array(16).fill(0);
    for (let i = 0; i < 32_000; i++) buckets[r.int(16)]++;
    for (const b of buckets) expect(Math.abs(b - 2000)).toBeLessThan(400);
  });
});

describe("cases", () => {
  it("case K is the same whatever was planned before it", () => {
    const fresh = sent(planCase(1, 57, fx, doc));
    for (let k = 0; k < 57; k++) planCase(1, k, fx, doc);
    expect(sent(planCase(1, 57, fx, doc))).toBe(fresh);
    expect(sent(planCase(2, 57, fx, doc))).not.toBe(fresh);
  }, 60_000);

  it("GGUF cases change the file, and most still start with a GGUF header", () => {
    const original = serialize(doc).bytes;
    let changed = 0, gguf = 0, magic = 0;
    for (let k = 0; k < 300; k++) {
      const p = planCase(1, k, fx, doc);
      if (p.kind !== "gguf") continue;
      gguf++;
      const body = p.steps[0]!.req.body!;
      if (!body.equals(original)) changed++;
      if (body.subarray(0, 4).toString("latin1") === "GGUF") magic++;
    }
    expect(gguf).toBeGreaterThan(50);
    expect(changed).toBeGreaterThan(gguf * 0.95);
    expect(magic).toBeGreaterThan(gguf * 0.8);
  }, 60_000);

  it("no request declares a Content-Length above its body, except one over the daemon's limit", () => {
    const lies: string[] = [];
    for (let k = 0; k < 1000; k++) {
      for (const s of planCase(1, k, fx, doc).steps) {
        const declared = s.req.headers["content-length"];
        if (declared === undefined) continue;
        const n = Number(declared);
        if (n > (s.req.body?.length ?? 0) && n <= 64 << 20) lies.push(`case ${k} ${s.label}: ${declared} for ${s.req.body?.length ?? 0} bytes`);
      }
    }
    expect(lies).toEqual([]);
  }, 60_000);

  it("pull, push and create name no registry but 127.0.0.1:1 in 1,000 cases", () => {
    const names: string[] = [];
    for (let k = 0; k < 1000; k++) {
      const p = planCase(1, k, fx, doc);
      for (const s of p.steps) {
        if (!["/api/pull", "/api/push", "/api/create"].some((r) => s.req.path.toLowerCase().startsWith(r))) continue;
        let body: Record<string, unknown>;
        try {
          body = JSON.parse(s.req.body?.toString("utf8") ?? "") as Record<string, unknown>;
        } catch {
          continue; // invalid JSON names nothing
        }
        if (!body || typeof body !== "object") continue;
        const remote = s.req.path.toLowerCase().startsWith("/api/create") ? [body.from] : [body.model, body.name];
        if (typeof body.modelfile === "string") for (const m of body.modelfile.matchAll(/^\s*from\s+(\S+)/gim)) remote.push(m[1]);
        for (const n of remote) if (typeof n === "string") names.push(n);
      }
    }
    expect(names.length).toBeGreaterThan(30);
    const local = (n: string) => n.toLowerCase().startsWith(`${NOWHERE}/`) || /^(fuzz-base|fuzz-embed)(:latest)?$/i.test(n) || n.startsWith("@") || n === "";
    expect(names.filter((n) => !local(n))).toEqual([]);
  }, 60_000);
});
