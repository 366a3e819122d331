// One schema per request type. Unknown fields are ignored, as Ollama's JSON decoder does.
import { z } from "zod";

const keepAlive = z.union([z.number(), z.string()]).optional();
// think, format and tools are checked by the routes (common.ts resolveThink, prompt/format.ts,
// prompt/tool-validation.ts validateTools) so that their errors carry Ollama's exact messages.
const think = z.unknown().optional();
const format = z.unknown().optional();
// Inference flags shared by /api/generate and /api/chat.
const inference = {
  truncate: z.boolean().nullish(),
  shift: z.boolean().nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().nullish(),
};
const options = z.record(z.string(), z.unknown()).optional();

const toolCall = z.object({
  id: z.string().optional(),
  type: z.string().optional(),
  function: z.object({
    index: z.number().int().optional(),
    name: z.string(),
    arguments: z.union([z.record(z.string(), z.unknown()), z.string()]).optional(),
  }),
});

export const messageSchema = z.object({
  role: z.string().transform((r) => r.toLowerCase()),
  content: z.string().nullish().transform((c) => c ?? ""),
  thinking: z.string().optional(),
  images: z.array(z.string()).nullish(),
  tool_calls: z.array(toolCall).nullish(),
  tool_name: z.string().optional(),
  tool_call_id: z.string().optional(),
});
export type ChatMessage = z.infer<typeof messageSchema>;

export const generateSchema = z.object({
  model: z.string().default(""),
  prompt: z.string().default(""),
  suffix: z.string().optional(),
  system: z.string().optional(),
  template: z.string().optional(),
  context: z.array(z.number().int()).nullish(),
  stream: z.boolean().nullish(),
  raw: z.boolean().optional(),
  format,
  keep_alive: keepAlive,
  images: z.array(z.string()).nullish(),
  options,
  think,
  ...inference,
  _debug_render_only: z.boolean().optional(),
});
export type GenerateBody = z.infer<typeof generateSchema>;

export const chatSchema = z.object({
  model: z.string().default(""),
  messages: z.array(messageSchema).nullish().transform((m) => m ?? []),
  tools: z.unknown().optional(),
  /** Beyond Ollama: "auto", "none", "required" or a function by name (prompt/tool-choice.ts). */
  tool_choice: z.unknown().optional(),
  stream: z.boolean().nullish(),
  format,
  keep_alive: keepAlive,
  options,
  think,
  ...inference,
  _debug_render_only: z.boolean().optional(),
});
export type ChatBody = z.infer<typeof chatSchema>;

export const showSchema = z.object({
  model: z.string().optional(),
  name: z.string().optional(),
  verbose: z.boolean().optional(),
  system: z.string().optional(),
  options,
});

export const createSchema = z.object({
  model: z.string().optional(),
  name: z.string().optional(),
  from: z.string().optional(),
  files: z.record(z.string(), z.string()).optional(),
  adapters: z.record(z.string(), z.string()).optional(),
  template: z.string().optional(),
  system: z.string().optional(),
  license: z.union([z.string(), z.array(z.string())]).optional(),
  parameters: z.record(z.string(), z.unknown()).optional(),
  messages: z.array(z.object({ role: z.string(), content: z.string() })).optional(),
  quantize: z.string().optional(),
  quantization: z.string().optional(),
  stream: z.boolean().nullish(),
});
export type CreateBody = z.infer<typeof createSchema>;

export const deleteSchema = z.object({ model: z.string().optional(), name: z.string().optional() });
export const copySchema = z.object({ source: z.string().default(""), destination: z.string().default("") });

export const tokenizeSchema = z.object({
  model: z.string().default(""),
  content: z.string().default(""),
  keep_alive: keepAlive,
  options,
});
export type TokenizeBody = z.infer<typeof tokenizeSchema>;

export const detokenizeSchema = z.object({
  model: z.string().default(""),
  tokens: z.array(z.number().int().nonnegative()).default([]),
  keep_alive: keepAlive,
  options,
});
export type DetokenizeBody = z.infer<typeof detokenizeSchema>;
