// systemd unit, environment drop-in and sysusers.d entry for the ollamats daemon.
//
// Readiness: Type=notify. The daemon runs `systemd-notify --ready` once its listener is up
// (src/service/notify.ts), so `systemctl start` returns — and units ordered After= it start —
// only when the API answers. The message comes from that helper process, hence NotifyAccess=all.
// Stop: SIGTERM to the main process only (KillMode=mixed); the daemon stops accepting, ends its
// runners and open streams, and exits 0; whatever is left after TimeoutStopSec gets SIGKILL.
import { MARKER, SERVICE_HOME, SERVICE_NAME, SERVICE_USER, type ServiceSpec } from "./common.js";

/** Quote one ExecStart= word: C-style escapes inside double quotes, `%` and `$` doubled. */
export function execWord(word: string): string {
  if (/[\n\r\0]/.test(word)) throw new Error(`cannot put a newline in a systemd command line: ${JSON.stringify(word)}`);
  const doubled = word.replace(/%/g, "%%").replace(/\$/g, "$$$$");
  if (/^[A-Za-z0-9_\/.:@+,=-]+$/.test(word)) return doubled;
  return `"${doubled.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/** One `Environment="KEY=VALUE"` line (no variable expansion happens there; `%` is a specifier). */
export function environmentLine(key: string, value: string): string {
  const text = `${key}=${value}`.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/%/g, "%%");
  return `Environment="${text}"`;
}

/** Read back the Environment= lines of a drop-in we wrote. */
export function parseEnvironmentDropIn(text: string): [string, string][] {
  const out: [string, string][] = [];
  for (const raw of text.split("\n")) {
    const m = /^Environment="(.*)"\s*$/.exec(raw.trim());
    if (!m) continue;
    const unescaped = (m[1] ?? "").replace(/%%/g, "%").replace(/\\(.)/g, "$1");
    const eq = unescaped.indexOf("=");
    if (eq > 0) out.push([unescaped.slice(0, eq), unescaped.slice(eq + 1)]);
  }
  return out;
}

function header(what: string, packaged = false): string {
  if (packaged) {
    return (
      `# ${what[0]!.toUpperCase()}${what.slice(1)} Shipped by the ollamats package.\n` +
      "# Override settings in a drop-in (`systemctl edit ollamats`), not here: updates replace this file.\n"
    );
  }
  return (
    `# ${MARKER}: ${what}\n` +
    "# Written by `ollamats service install`, removed by `ollamats service uninstall`; reinstalling\n" +
    "# replaces it. Keep your own settings in another drop-in (`systemctl edit ollamats`).\n"
  );
}

/** The unit file (ollamats.service). */
export function systemdUnit(spec: ServiceSpec): string {
  const system = spec.scope === "system";
  const lines = [
    header(system ? "the system-wide ollamats service." : "the per-user ollamats service.", spec.packaged).trimEnd(),
    "[Unit]",
    "Description=ollamats, an Ollama-compatible LLM server",
    ...(system ? ["After=network-online.target", "Wants=network-online.target"] : []),
    "",
    "[Service]",
    "# Ready once the API listens: the daemon reports it with `systemd-notify --ready`.",
    "Type=notify",
    "NotifyAccess=all",
    `ExecStart=${spec.command.map(execWord).join(" ")}`,
    ...(system
      ? [
          `User=${SERVICE_USER}`,
          `Group=${SERVICE_USER}`,
          `# ${SERVICE_HOME}, owned by ${SERVICE_USER}; the models live in ${SERVICE_HOME}/.ollama/models`,
          "# unless OLLAMA_MODELS says otherwise.",
          `StateDirectory=${SERVICE_NAME}`,
          `WorkingDirectory=${SERVICE_HOME}`,
          `Environment="HOME=${SERVICE_HOME}"`,
        ]
      : []),
    "# OLLAMA_* settings: ollamats.service.d/environment.conf",
    "Restart=on-failure",
    "RestartSec=3",
    "TimeoutStartSec=120",
    "# SIGTERM to the daemon only: it drains and stops its model runners itself.",
    "KillMode=mixed",
    "TimeoutStopSec=30",
    "StandardOutput=journal",
    "StandardError=journal",
    `SyslogIdentifier=${SERVICE_NAME}`,
    ...(system ? ["NoNewPrivileges=true", "PrivateTmp=true"] : []),
    "",
    "[Install]",
    `WantedBy=${system ? "multi-user.target" : "default.target"}`,
    "",
  ];
  return lines.join("\n");
}

/** The environment drop-in (ollamats.service.d/environment.conf). */
export function systemdEnvironmentDropIn(env: [string, string][], packaged = false): string {
  let out = packaged
    ? "# The environment of the ollamats service: one Environment= line per variable, then\n" +
      "# `systemctl daemon-reload && systemctl restart ollamats`.\n"
    : header("the environment of the ollamats service.") +
      "# Change it with `ollamats service install --env KEY=VALUE` (`--env KEY=` removes KEY).\n";
  out += "[Service]\n";
  if (env.length === 0) out += '#Environment="OLLAMA_HOST=0.0.0.0:11434"\n';
  for (const [k, v] of env) out += environmentLine(k, v) + "\n";
  return out;
}

/** sysusers.d entry creating the service account with its home. */
export function sysusersEntry(packaged = false): string {
  return (
    (packaged ? "# The account of the system-wide ollamats service. Shipped by the ollamats package.\n" : `# ${MARKER}: the account of the system-wide ollamats service (see systemd-sysusers).\n`) +
    `u ${SERVICE_USER} - "ollamats LLM server" ${SERVICE_HOME} /usr/sbin/nologin\n`
  );
}
