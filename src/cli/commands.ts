// The command table: names, positionals, flags and help text as data. A command's module (and so
// everything it imports: the REST client, the REPL, the daemon) is loaded only when it runs.

import type { CommandSpec, FlagSpec } from "./command-line.js";

const insecure: FlagSpec = { name: "insecure", type: "bool", default: false, describe: "Use an insecure registry" };

const HOST_ENV = "      OLLAMA_HOST                   IP Address for the ollama server (default 127.0.0.1:11434)";

const serve: CommandSpec = {
  name: "serve",
  aliases: ["start"],
  describe: "Start ollamats",
  epilogue:
    "Environment Variables:\n" +
    "      OLLAMA_DEBUG                  Show additional debug information (e.g. OLLAMA_DEBUG=1)\n" +
    HOST_ENV +
    "\n" +
    "      OLLAMA_CONTEXT_LENGTH         Context length to use unless otherwise specified\n" +
    '      OLLAMA_KEEP_ALIVE             The duration that models stay loaded in memory (default "5m")\n' +
    "      OLLAMA_MAX_LOADED_MODELS      Maximum number of loaded models per GPU\n" +
    "      OLLAMA_MAX_QUEUE              Maximum number of queued requests\n" +
    "      OLLAMA_MODELS                 The path to the models directory\n" +
    "      OLLAMA_NUM_PARALLEL           Maximum number of parallel requests\n" +
    "      OLLAMA_NOPRUNE                Do not prune model blobs on startup\n" +
    "      OLLAMA_ORIGINS                A comma separated list of allowed origins\n" +
    "      OLLAMA_SCHED_SPREAD           Always schedule model across all GPUs\n" +
    "      OLLAMA_FLASH_ATTENTION        Enabled flash attention\n" +
    "      OLLAMA_KV_CACHE_TYPE          Quantization type for the K/V cache (default: f16)\n" +
    "      OLLAMA_GPU_OVERHEAD           Reserve a portion of VRAM per GPU (bytes)\n" +
    '      OLLAMA_LOAD_TIMEOUT           How long to allow model loads to stall before giving up (default "5m")',
  load: async () => (await import("./commands/serve.js")).serve,
};

const create: CommandSpec = {
  name: "create",
  usage: "<model>",
  describe: "Create a model",
  args: { min: 1, max: 1 },
  flags: [
    { name: "file", short: "f", type: "string", describe: 'Name of the Modelfile (default "Modelfile")' },
    // only levels the daemon's quantizer writes (registry/quantize.ts; a unit test keeps them in step)
    { name: "quantize", short: "q", type: "string", describe: "Quantize model to this level (q8_0 or q4_0, from an F32, F16 or BF16 model)" },
  ],
  load: async () => (await import("./commands/create.js")).create,
};

const show: CommandSpec = {
  name: "show",
  usage: "<model>",
  describe: "Show information for a model",
  args: { min: 1, max: 1 },
  flags: [
    { name: "license", type: "bool", default: false, describe: "Show license of a model" },
    { name: "modelfile", type: "bool", default: false, describe: "Show Modelfile of a model" },
    { name: "parameters", type: "bool", default: false, describe: "Show parameters of a model" },
    { name: "template", type: "bool", default: false, describe: "Show template of a model" },
    { name: "system", type: "bool", default: false, describe: "Show system message of a model" },
    { name: "verbose", short: "v", type: "bool", default: false, describe: "Show detailed model information" },
  ],
  load: async () => (await import("./commands/show.js")).show,
};

const run: CommandSpec = {
  name: "run",
  usage: "<model> [prompt..]",
  describe: "Run a model",
  args: { min: 1, max: Infinity },
  flags: [
    { name: "keepalive", type: "string", describe: "Duration to keep a model loaded (e.g. 5m)" },
    { name: "verbose", type: "bool", default: false, describe: "Show timings for response" },
    insecure,
    { name: "nowordwrap", type: "bool", default: false, describe: "Don't wrap words to the next line automatically" },
    { name: "format", type: "string", describe: "Response format (e.g. json)" },
    { name: "think", type: "string", noOptDefault: "true", describe: "Enable thinking mode: true/false or high/medium/low for supported models" },
    { name: "hidethinking", type: "bool", default: false, describe: "Hide thinking output (if provided)" },
    { name: "truncate", type: "bool", describe: "For embedding models: truncate inputs exceeding context length (default: true)" },
    { name: "dimensions", type: "string", describe: "Truncate output embeddings to specified dimension (embedding models only)" },
  ],
  epilogue:
    "Environment Variables:\n" +
    "      OLLAMA_EDITOR                 Path to editor for interactive prompt editing (Ctrl+G)\n" +
    HOST_ENV +
    "\n" +
    "      OLLAMA_NOHISTORY              Do not preserve readline history",
  load: async () => (await import("./commands/run.js")).run,
};

const stop: CommandSpec = {
  name: "stop",
  usage: "<model>",
  describe: "Stop a running model",
  args: { min: 1, max: 1 },
  load: async () => (await import("./commands/stop.js")).stop,
};

const pull: CommandSpec = {
  name: "pull",
  usage: "<model>",
  describe: "Pull a model from a registry",
  args: { min: 1, max: 1 },
  flags: [insecure],
  load: async () => (await import("./commands/pull.js")).pull,
};

const push: CommandSpec = {
  name: "push",
  usage: "<model>",
  describe: "Push a model to a registry",
  args: { min: 1, max: 1 },
  flags: [insecure],
  load: async () => (await import("./commands/push.js")).push,
};

const list: CommandSpec = {
  name: "list",
  aliases: ["ls"],
  usage: "[prefix]",
  describe: "List models",
  args: { min: 0, max: 1 },
  load: async () => (await import("./commands/list.js")).list,
};

const ps: CommandSpec = {
  name: "ps",
  usage: "[prefix]",
  describe: "List running models",
  args: { min: 0, max: 1 },
  load: async () => (await import("./commands/ps.js")).ps,
};

const cp: CommandSpec = {
  name: "cp",
  usage: "<source> <destination>",
  describe: "Copy a model",
  args: { min: 2, max: 2 },
  load: async () => (await import("./commands/cp.js")).cp,
};

const rm: CommandSpec = {
  name: "rm",
  usage: "<models..>",
  describe: "Remove a model",
  args: { min: 1, max: Infinity },
  load: async () => (await import("./commands/rm.js")).rm,
};

const serviceCommon: FlagSpec[] = [
  { name: "user", type: "bool", default: false, describe: "The current user's service (systemd --user, or a LaunchAgent) instead of the system-wide one" },
  { name: "root", type: "string", describe: "Write the files under this directory and run no systemctl/launchctl (packaging, tests)" },
  { name: "platform", type: "string", choices: ["linux", "darwin"], describe: "Service manager to write for (default: this machine's)" },
];

const service: CommandSpec = {
  name: "service",
  describe: "Run ollamats as a system service (systemd, launchd)",
  needsSubcommand: "requires a subcommand: install, uninstall, status or print",
  subcommands: [
    {
      name: "install",
      describe: "Install and start the service",
      flags: [
        ...serviceCommon,
        { name: "env", type: "strings", describe: "Set KEY=VALUE in the service's environment (KEY= removes it, KEY copies it from here); repeatable" },
        { name: "start", type: "bool", default: true, negatable: true, describe: "Start (or restart) the service after installing; --no-start to only enable it" },
        { name: "run-as", type: "string", describe: "macOS system-wide service: the account to run as (default: the sudo user)" },
      ],
      load: async () => (await import("./commands/service.js")).install,
    },
    {
      name: "uninstall",
      describe: "Stop the service and remove its files",
      flags: serviceCommon,
      load: async () => (await import("./commands/service.js")).uninstall,
    },
    {
      name: "status",
      describe: "Show whether the service is installed and running (exit code 0 running, 3 stopped, 4 not installed)",
      flags: serviceCommon,
      load: async () => (await import("./commands/service.js")).status,
    },
    {
      name: "print",
      describe: "Print the files install would write",
      flags: [...serviceCommon, { name: "env", type: "strings", describe: "KEY=VALUE for the service's environment; repeatable" }],
      load: async () => (await import("./commands/service.js")).print,
    },
  ],
};

export const ROOT: CommandSpec = {
  name: "",
  describe: "Large language model runner",
  flags: [{ name: "version", short: "v", type: "bool", describe: "Show version information" }],
  subcommands: [serve, create, show, run, stop, pull, push, list, ps, cp, rm, service],
  load: async () => (await import("./commands/root.js")).root,
};
