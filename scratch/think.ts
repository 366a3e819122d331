import { readFileSync, readdirSync } from "node:fs";
import { selectTemplate, renderPrompt } from "../src/daemon/prompt/render.js";
import { thinkingTags } from "../src/daemon/prompt/thinking.js";
const dir = "test/fixtures/chat-templates";
for (const f of readdirSync(dir).filter((f) => f.endsWith(".jinja")).sort()) {
  const t = selectTemplate(undefined, readFileSync(`${dir}/${f}`, "utf8"), "<s>", "</s>");
  let p = "";
  try { p = renderPrompt(t, { messages: [{ role: "user", content: "hello" }, { role: "assistant", content: "zq_answer", thinking: "zq_thought" }], think: true, isThinkSet: true }); } catch (e) { p = "ERR " + (e as Error).message.slice(0, 60); }
  const i = p.indexOf("zq_thought");
  let g = ""; try { g = renderPrompt(t, { messages: [{ role: "user", content: "hello" }], think: true, isThinkSet: true }); } catch {}
  console.log(f.padEnd(50), JSON.stringify(thinkingTags(t)), i === -1 ? "-" : JSON.stringify(p.slice(Math.max(0, i - 25), i + 40)), "| gen:", JSON.stringify(g.slice(-25)));
}
