// Chat templates (tokenizer.chat_template) the test-model generator can write, each the Jinja
// template its family ships (the texts are the ones Ollama's template/index.json lists for that
// family, so Ollama maps each to its Go template), with the special tokens its turns use.

export type ChatFormat = "chatml" | "llama3" | "gemma" | "mistral" | "none";

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
  none: { tokens: [] },
};
