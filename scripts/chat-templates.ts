// Chat templates (tokenizer.chat_template) the test-model generator can write, each the Jinja
// template its family ships (the texts are the ones Ollama's template/index.json lists for that
// family, so Ollama maps each to its Go template), with the special tokens its turns use.

import { readFileSync } from "node:fs";

export type ChatFormat = "chatml" | "llama3" | "llama3.2" | "gemma" | "mistral" | "phi3" | "harmony" | "qwen3-coder" | "functionary" | "none";

export interface ChatFormatSpec {
  /** tokenizer.chat_template; none for "none" (no key at all). */
  template?: string;
  /** Control tokens the template's turns are made of (added to the vocabulary). */
  tokens: readonly string[];
  /** The token that ends an assistant turn, when the format has its own (it becomes the eos id). */
  endOfTurn?: string;
}

export const CHAT_FORMATS: Record<ChatFormat, ChatFormatSpec> = {
  // ChatML, as found in many GGUF files (ours since the first models: the bytes of every
  // existing test model depend on it)
  chatml: {
    template: "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
    tokens: ["<|im_start|>", "<|im_end|>"],
    endOfTurn: "<|im_end|>",
  },
  // Meta-Llama-3-8B-Instruct
  llama3: {
    template: "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}",
    tokens: ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
    endOfTurn: "<|eot_id|>",
  },
  // Llama-3.2-1B-Instruct / 3B-Instruct (tools, today's date via strftime_now): too far from
  // Llama 3.1's for Ollama to map it, so it stays a Jinja template
  "llama3.2": {
    template: "{{- bos_token }}\n{%- if custom_tools is defined %}\n    {%- set tools = custom_tools %}\n{%- endif %}\n{%- if not tools_in_user_message is defined %}\n    {%- set tools_in_user_message = true %}\n{%- endif %}\n{%- if not date_string is defined %}\n    {%- if strftime_now is defined %}\n        {%- set date_string = strftime_now(\"%d %b %Y\") %}\n    {%- else %}\n        {%- set date_string = \"26 Jul 2024\" %}\n    {%- endif %}\n{%- endif %}\n{%- if not tools is defined %}\n    {%- set tools = none %}\n{%- endif %}\n\n{#- This block extracts the system message, so we can slot it into the right place. #}\n{%- if messages[0]['role'] == 'system' %}\n    {%- set system_message = messages[0]['content']|trim %}\n    {%- set messages = messages[1:] %}\n{%- else %}\n    {%- set system_message = \"\" %}\n{%- endif %}\n\n{#- System message #}\n{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}\n{%- if tools is not none %}\n    {{- \"Environment: ipython\\n\" }}\n{%- endif %}\n{{- \"Cutting Knowledge Date: December 2023\\n\" }}\n{{- \"Today Date: \" + date_string + \"\\n\\n\" }}\n{%- if tools is not none and not tools_in_user_message %}\n    {{- \"You have access to the following functions. To call a function, please respond with JSON for a function call.\" }}\n    {{- 'Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}.' }}\n    {{- \"Do not use variables.\\n\\n\" }}\n    {%- for t in tools %}\n        {{- t | tojson(indent=4) }}\n        {{- \"\\n\\n\" }}\n    {%- endfor %}\n{%- endif %}\n{{- system_message }}\n{{- \"<|eot_id|>\" }}\n\n{#- Custom tools are passed in a user message with some extra guidance #}\n{%- if tools_in_user_message and not tools is none %}\n    {#- Extract the first user message so we can plug it in here #}\n    {%- if messages | length != 0 %}\n        {%- set first_user_message = messages[0]['content']|trim %}\n        {%- set messages = messages[1:] %}\n    {%- else %}\n        {{- raise_exception(\"Cannot put tools in the first user message when there's no first user message!\") }}\n{%- endif %}\n    {{- '<|start_header_id|>user<|end_header_id|>\\n\\n' -}}\n    {{- \"Given the following functions, please respond with a JSON for a function call \" }}\n    {{- \"with its proper arguments that best answers the given prompt.\\n\\n\" }}\n    {{- 'Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}.' }}\n    {{- \"Do not use variables.\\n\\n\" }}\n    {%- for t in tools %}\n        {{- t | tojson(indent=4) }}\n        {{- \"\\n\\n\" }}\n    {%- endfor %}\n    {{- first_user_message + \"<|eot_id|>\"}}\n{%- endif %}\n\n{%- for message in messages %}\n    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}\n        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}\n    {%- elif 'tool_calls' in message %}\n        {%- if not message.tool_calls|length == 1 %}\n            {{- raise_exception(\"This model only supports single tool-calls at once!\") }}\n        {%- endif %}\n        {%- set tool_call = message.tool_calls[0].function %}\n        {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}\n        {{- '{\"name\": \"' + tool_call.name + '\", ' }}\n        {{- '\"parameters\": ' }}\n        {{- tool_call.arguments | tojson }}\n        {{- \"}\" }}\n        {{- \"<|eot_id|>\" }}\n    {%- elif message.role == \"tool\" or message.role == \"ipython\" %}\n        {{- \"<|start_header_id|>ipython<|end_header_id|>\\n\\n\" }}\n        {%- if message.content is mapping or message.content is iterable %}\n            {{- message.content | tojson }}\n        {%- else %}\n            {{- message.content }}\n        {%- endif %}\n        {{- \"<|eot_id|>\" }}\n    {%- endif %}\n{%- endfor %}\n{%- if add_generation_prompt %}\n    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}\n{%- endif %}\n",
    tokens: ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
    endOfTurn: "<|eot_id|>",
  },
  // gemma-7b-it / gemma-2 (no system role: the template raises on one)
  gemma: {
    template: "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}",
    tokens: ["<start_of_turn>", "<end_of_turn>"],
    endOfTurn: "<end_of_turn>",
  },
  // Mistral-7B-Instruct v0.1/v0.2 (roles must alternate; the turn ends on the eos token)
  mistral: {
    template: "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}",
    tokens: ["[INST]", "[/INST]"],
  },
  // Phi-3-mini-128k-instruct (llama.cpp requires <|endoftext|> in a vocabulary it takes for Phi-3's)
  phi3: {
    template: "{{ bos_token }}{% for message in messages %}{{'<|' + message['role'] + '|>' + '\n' + message['content'] + '<|end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}",
    tokens: ["<|system|>", "<|user|>", "<|assistant|>", "<|end|>", "<|endoftext|>"],
    endOfTurn: "<|end|>",
  },
  // gpt-oss-120b's (OpenAI's harmony format: channels, TypeScript-like tool lists, reasoning
  // levels), as llama.cpp keeps it in models/templates; kept in its own file, being 16 kB.
  // llama.cpp ends a turn on <|return|> or <|call|> and shows the other tokens as text.
  harmony: {
    template: readFileSync(new URL("./templates/gpt-oss.jinja", import.meta.url), "utf8"),
    tokens: ["<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|return|>", "<|call|>"],
    endOfTurn: "<|return|>",
  },
  // Qwen3-Coder's (tool calls as `<function=NAME><parameter=KEY>` markup, not JSON), as llama.cpp
  // keeps it in models/templates; <tool_call> and </tool_call> are single tokens in Qwen's vocabulary.
  "qwen3-coder": {
    template: readFileSync(new URL("./templates/qwen3-coder.jinja", import.meta.url), "utf8"),
    tokens: ["<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"],
    endOfTurn: "<|im_end|>",
  },
  // functionary-medium-v3.2 (llama.cpp's models/templates): every message addressed on a line
  // after `>>>`, the generation prompt ending in it
  functionary: {
    template: readFileSync(new URL("./templates/functionary-v3.2.jinja", import.meta.url), "utf8"),
    tokens: ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
    endOfTurn: "<|eot_id|>",
  },
  none: { tokens: [] },
};
