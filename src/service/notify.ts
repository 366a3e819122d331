// systemd readiness (sd_notify) for `Type=notify` units. Node cannot send on a unix datagram
// socket, so the daemon runs `systemd-notify --ready` once it listens. The message then comes from
// a child process, which is why the unit says `NotifyAccess=all`. systemd-notify (systemd ≥ 246)
// waits until the service manager has processed the message (BARRIER=1), so the short-lived sender
// is still alive when systemd attributes it to the unit.
import { execFile } from "node:child_process";

export interface NotifyOptions {
  /** Free-form status text shown by `systemctl status`. */
  status?: string;
  /** Told when the notification could not be sent (the unit would then time out starting). */
  onError?: (message: string) => void;
  /** The environment to read NOTIFY_SOCKET from (tests). */
  env?: NodeJS.ProcessEnv;
  /** The systemd-notify binary (tests). */
  command?: string;
}

/** True when a service manager waits for our readiness message. */
export function notifyWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  return (env.NOTIFY_SOCKET ?? "") !== "";
}

/**
 * Tell systemd the daemon is ready (call after the listener is up). Does nothing unless
 * NOTIFY_SOCKET is set. Never throws; resolves when systemd-notify has finished.
 */
export function notifyReadyAsync(opts: NotifyOptions = {}): Promise<boolean> {
  const env = opts.env ?? process.env;
  if (!notifyWanted(env)) return Promise.resolve(false);
  const args = ["--ready"];
  if (opts.status) args.push(`--status=${opts.status.replace(/\n/g, " ")}`);
  return new Promise((resolve) => {
    execFile(opts.command ?? "systemd-notify", args, { env, timeout: 30_000 }, (err, _stdout, stderr) => {
      if (err) {
        const detail = stderr.trim() || err.message;
        opts.onError?.(`could not tell systemd the service is ready (systemd-notify --ready): ${detail}`);
        resolve(false);
        return;
      }
      resolve(true);
    });
  });
}

/** Fire-and-forget form of notifyReadyAsync, for serve.ts right after listen. */
export function notifyReady(opts: NotifyOptions = {}): void {
  void notifyReadyAsync(opts);
}
