import { Template } from "@huggingface/jinja";
import { readFileSync } from "node:fs";
const t = new Template(readFileSync("scripts/templates/gpt-oss.jinja", "utf8"));
const tools = [{ type: "function", function: { name: "get_weather", description: "Weather", parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"] } } }];
console.log(t.render({ messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }, { role: "assistant", content: "", thinking: "hmm", tool_calls: [{ type: "function", function: { name: "get_weather", arguments: { location: "Paris" } } }] }, { role: "tool", content: "sunny" }, { role: "user", content: "thanks" }], tools, add_generation_prompt: true, reasoning_effort: "high", bos_token: "", eos_token: "" }));
