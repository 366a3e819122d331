// launchd property list for the ollamats daemon: a LaunchAgent (per user, ~/Library/LaunchAgents)
// or a LaunchDaemon (system-wide, /Library/LaunchDaemons, run as a named user).
//
// launchd has no readiness protocol: the job counts as running once the process exists, and
// `ollamats service status` asks the API itself. KeepAlive/SuccessfulExit=false restarts the daemon
// when it crashes but not after a clean stop; launchd stops it with SIGTERM and, after ExitTimeOut
// seconds, SIGKILL. stdout and stderr (the daemon's log) go to one log file.
import { LAUNCHD_LABEL, MARKER, type ServiceSpec } from "./common.js";

/** XML text escaping for element content. */
export function xmlEscape(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function xmlUnescape(s: string): string {
  return s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, "&");
}

const string = (s: string) => `<string>${xmlEscape(s)}</string>`;

/** The property list. */
export function launchdPlist(spec: ServiceSpec): string {
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    ...(spec.packaged
      ? [
          `<!-- The ollamats service for launchd. Shipped by the ollamats package: copy it to`,
          "     ~/Library/LaunchAgents (per user) or /Library/LaunchDaemons (add UserName) and adjust the",
          "     paths; set OLLAMA_* variables under EnvironmentVariables. -->",
        ]
      : [
          `<!-- ${MARKER}: the ${spec.scope === "system" ? "system-wide" : "per-user"} ollamats service.`,
          "     Written by `ollamats service install`, removed by `ollamats service uninstall`;",
          "     reinstalling replaces it. Its EnvironmentVariables come from the install command's env",
          "     option (see `ollamats service install -h`). -->",
        ]),
    '<plist version="1.0">',
    "<dict>",
    "  <key>Label</key>",
    `  ${string(LAUNCHD_LABEL)}`,
    "  <key>ProgramArguments</key>",
    "  <array>",
    ...spec.command.map((word) => `    ${string(word)}`),
    "  </array>",
  ];
  if (spec.env.length > 0) {
    lines.push("  <key>EnvironmentVariables</key>", "  <dict>");
    for (const [k, v] of spec.env) lines.push(`    <key>${xmlEscape(k)}</key>`, `    ${string(v)}`);
    lines.push("  </dict>");
  }
  if (spec.scope === "system" && spec.runAs) lines.push("  <key>UserName</key>", `  ${string(spec.runAs)}`);
  lines.push(
    "  <key>RunAtLoad</key>",
    "  <true/>",
    "  <key>KeepAlive</key>",
    "  <dict>",
    "    <key>SuccessfulExit</key>",
    "    <false/>",
    "  </dict>",
    "  <key>ThrottleInterval</key>",
    "  <integer>3</integer>",
    "  <key>ExitTimeOut</key>",
    "  <integer>30</integer>",
  );
  if (spec.logFile) {
    lines.push("  <key>StandardOutPath</key>", `  ${string(spec.logFile)}`, "  <key>StandardErrorPath</key>", `  ${string(spec.logFile)}`);
  }
  lines.push("</dict>", "</plist>", "");
  return lines.join("\n");
}

/** Read back the EnvironmentVariables of a plist we wrote. */
export function parsePlistEnvironment(text: string): [string, string][] {
  const block = /<key>EnvironmentVariables<\/key>\s*<dict>([\s\S]*?)<\/dict>/.exec(text)?.[1] ?? "";
  const out: [string, string][] = [];
  const re = /<key>([^<]*)<\/key>\s*<string>([^<]*)<\/string>/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(block))) out.push([xmlUnescape(m[1] ?? ""), xmlUnescape(m[2] ?? "")]);
  return out;
}
