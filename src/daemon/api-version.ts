// The Ollama API version /api/version answers. Clients gate features on it (tools 0.3, structured
// output 0.5, thinking 0.9, logprobs 0.12.11), so it names the newest Ollama release whose REST API
// ollamats serves: 0.13.3 added /v1/responses and 0.14 the Anthropic /v1/messages, which ollamats
// does not have, so a client that gates those on the version does not call them here. ollamats'
// own version is answered beside it (`ollamats_version`).
export const OLLAMA_API_VERSION = "0.13.2";
