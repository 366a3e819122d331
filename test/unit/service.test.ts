// The service files (systemd unit, drop-in, sysusers entry, launchd plist) checked by the real
// tools — systemd-analyze verify, systemd-sysusers, xmllint against a plist DTD — and
// `ollamats service install|uninstall|status` run against a temporary root.
import { execFile, spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isOurs, MARKER, mergeEnv, parseEnvArg, type ServiceSpec } from "../../src/service/common.js";
import { launchdPlist, parsePlistEnvironment } from "../../src/service/launchd.js";
import { installService, serviceStatus, uninstallService, type CommandResult, type ServiceContext } from "../../src/service/manage.js";
import { notifyReadyAsync } from "../../src/service/notify.js";
import { packagedServiceFiles } from "../../src/service/packaged.js";
import { execWord, parseEnvironmentDropIn, systemdEnvironmentDropIn, systemdUnit, sysusersEntry } from "../../src/service/systemd.js";
import { CLI, REPO, startDaemon } from "../helpers/daemon.js";

const has = (tool: string) => spawnSync("sh", ["-c", `command -v ${tool}`]).status === 0;
/** In CI a missing tool is a failure (.ci/run installs it); on a developer machine the check is skipped. */
function need(tool: string): boolean {
  if (has(tool)) return true;
  if (process.env.CI) throw new Error(`${tool} is not installed (apt-get install -y systemd libxml2-utils)`);
  return false;
}

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "ollamats-service-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

let counter = 0;
async function freshDir(name: string): Promise<string> {
  const dir = path.join(tmp, `${name}-${++counter}`);
  await mkdir(dir, { recursive: true });
  return dir;
}

/** systemd-analyze verify on a unit (and the drop-ins beside it): passes only with no output at all. */
function verify(unitPath: string): { ok: boolean; output: string } {
  const r = spawnSync("systemd-analyze", ["verify", unitPath], { encoding: "utf8", env: { ...process.env, SYSTEMD_LOG_COLOR: "0" } });
  const output = `${r.stdout}${r.stderr}`.trim();
  return { ok: r.status === 0 && output === "", output };
}

async function writeUnit(dir: string, unit: string, dropIn?: string): Promise<string> {
  const file = path.join(dir, "ollamats.service");
  await writeFile(file, unit);
  if (dropIn !== undefined) {
    await mkdir(path.join(dir, "ollamats.service.d"), { recursive: true });
    await writeFile(path.join(dir, "ollamats.service.d", "environment.conf"), dropIn);
  }
  return file;
}

// A DTD for Apple's property list format (the grammar plutil checks), so xmllint validates the
// structure and not only well-formedness.
const PLIST_DTD = `<!ENTITY % value "(array | data | date | dict | real | integer | string | true | false)">
<!ELEMENT plist %value;>
<!ATTLIST plist version CDATA "1.0">
<!ELEMENT array (%value;)*>
<!ELEMENT dict (key, %value;)*>
<!ELEMENT key (#PCDATA)>
<!ELEMENT string (#PCDATA)>
<!ELEMENT data (#PCDATA)>
<!ELEMENT date (#PCDATA)>
<!ELEMENT real (#PCDATA)>
<!ELEMENT integer (#PCDATA)>
<!ELEMENT true EMPTY>
<!ELEMENT false EMPTY>
`;

/** An XML catalog that resolves the plist DOCTYPE to PLIST_DTD, so nothing is fetched. */
async function catalogEnv(): Promise<NodeJS.ProcessEnv> {
  const dtd = path.join(tmp, "plist.dtd");
  const catalog = path.join(tmp, "catalog.xml");
  await writeFile(dtd, PLIST_DTD);
  await writeFile(
    catalog,
    `<?xml version="1.0"?>
<catalog xmlns="urn:oasis:names:tc:entity:xmlns:xml:catalog">
  <public publicId="-//Apple//DTD PLIST 1.0//EN" uri="file://${dtd}"/>
  <system systemId="http://www.apple.com/DTDs/PropertyList-1.0.dtd" uri="file://${dtd}"/>
</catalog>
`,
  );
  return { ...process.env, XML_CATALOG_FILES: catalog };
}

/** Validates against the document's own DOCTYPE (resolved through the catalog). */
async function xmllint(file: string): Promise<{ code: number; out: string }> {
  const r = spawnSync("xmllint", ["--nonet", "--noout", "--valid", file], { encoding: "utf8", env: await catalogEnv() });
  return { code: r.status ?? -1, out: `${r.stdout}${r.stderr}`.trim() };
}

async function xpath(file: string, expr: string): Promise<string> {
  const r = spawnSync("xmllint", ["--nonet", "--xpath", expr, file], { encoding: "utf8", env: await catalogEnv() });
  return r.stdout.trim();
}

const TRICKY_ENV: [string, string][] = [
  ["OLLAMA_HOST", "0.0.0.0:11434"],
  ["OLLAMA_ORIGINS", 'http://a.example,"quoted" & <tag> 100%'],
  ["OLLAMA_MODELS", "/srv/models with space/$HOME\\x"],
  ["OLLAMA_KEEP_ALIVE", "-1"],
];

const systemSpec = (script = "/opt/ollamats/dist/cli/main.js"): ServiceSpec => ({
  scope: "system",
  command: [process.execPath, script, "serve"],
  env: TRICKY_ENV,
});

describe("systemd unit", () => {
  it("passes systemd-analyze verify, system-wide and per user, with its environment drop-in", async () => {
    if (!need("systemd-analyze")) return;
    for (const scope of ["system", "user"] as const) {
      const dir = await freshDir(`verify-${scope}`);
      const unit = await writeUnit(dir, systemdUnit({ ...systemSpec(), scope }), systemdEnvironmentDropIn(TRICKY_ENV));
      expect(verify(unit)).toEqual({ ok: true, output: "" });
    }
  });

  it("quotes an awkward program path so systemd reads it back", async () => {
    if (!need("systemd-analyze")) return;
    const dir = await freshDir("verify-quoted");
    const unit = await writeUnit(dir, systemdUnit(systemSpec('/opt/my apps/100%/"$x"/main.js')));
    expect(verify(unit)).toEqual({ ok: true, output: "" });
    expect(execWord('/opt/my apps/100%/"$x"/main.js')).toBe('"/opt/my apps/100%%/\\"$$x\\"/main.js"');
    expect(execWord("/usr/bin/node")).toBe("/usr/bin/node");
  });

  it("is checked for real: a bad key or a missing program fails verify", async () => {
    if (!need("systemd-analyze")) return;
    const dir = await freshDir("verify-bad");
    const bad = await writeUnit(dir, systemdUnit(systemSpec()), "[Service]\nEnviroment=TYPO=1\n");
    expect(verify(bad).ok).toBe(false);
    const dir2 = await freshDir("verify-missing");
    const missing = await writeUnit(dir2, systemdUnit({ ...systemSpec(), command: ["/nonexistent/node", "serve"] }));
    expect(verify(missing).ok).toBe(false);
  });

  it("is Type=notify, restarts on failure, logs to the journal and stops gracefully", () => {
    const unit = systemdUnit(systemSpec());
    expect(unit.split("\n")[0]).toContain(MARKER);
    for (const line of [
      "Type=notify",
      "NotifyAccess=all",
      "Restart=on-failure",
      "KillMode=mixed",
      "StandardError=journal",
      "User=ollamats",
      "StateDirectory=ollamats",
      "WantedBy=multi-user.target",
    ]) {
      expect(unit.split("\n")).toContain(line);
    }
    const user = systemdUnit({ ...systemSpec(), scope: "user" }).split("\n");
    expect(user).toContain("WantedBy=default.target");
    expect(user.some((l) => l.startsWith("User="))).toBe(false);
  });

  it("writes the environment so that it reads back exactly", () => {
    const text = systemdEnvironmentDropIn(TRICKY_ENV);
    expect(isOurs(text)).toBe(true);
    expect(parseEnvironmentDropIn(text)).toEqual(TRICKY_ENV);
    expect(text).toContain('Environment="OLLAMA_ORIGINS=http://a.example,\\"quoted\\" & <tag> 100%%"');
  });

  it("creates the service account with systemd-sysusers", async () => {
    if (!need("systemd-sysusers")) return;
    const root = await freshDir("sysusers");
    const conf = path.join(root, "etc/sysusers.d/ollamats.conf");
    await mkdir(path.dirname(conf), { recursive: true });
    await writeFile(conf, sysusersEntry());
    const r = spawnSync("systemd-sysusers", [`--root=${root}`, conf], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    const passwd = await readFile(path.join(root, "etc/passwd"), "utf8");
    expect(passwd).toMatch(/^ollamats:x:\d+:\d+:ollamats LLM server:\/var\/lib\/ollamats:\/usr\/sbin\/nologin$/m);
  });
});

describe("launchd plist", () => {
  it("is a valid property list (xmllint with the plist DTD) with launchd's keys", async () => {
    if (!need("xmllint")) return;
    const dir = await freshDir("plist");
    const file = path.join(dir, "com.ollamats.server.plist");
    const spec: ServiceSpec = { ...systemSpec(), scope: "system", runAs: "alice", logFile: "/Library/Logs/ollamats/server.log" };
    await writeFile(file, launchdPlist(spec));
    expect(await xmllint(file)).toEqual({ code: 0, out: "" });
    expect(await xpath(file, "string(/plist/dict/key[.='Label']/following-sibling::*[1])")).toBe("com.ollamats.server");
    expect(await xpath(file, "count(/plist/dict/key[.='ProgramArguments']/following-sibling::*[1]/string)")).toBe("3");
    expect(await xpath(file, "string(/plist/dict/key[.='ProgramArguments']/following-sibling::*[1]/string[3])")).toBe("serve");
    expect(await xpath(file, "name(/plist/dict/key[.='RunAtLoad']/following-sibling::*[1])")).toBe("true");
    expect(await xpath(file, "name(/plist/dict/key[.='KeepAlive']/following-sibling::dict[1]/key[.='SuccessfulExit']/following-sibling::*[1])")).toBe("false");
    expect(await xpath(file, "string(/plist/dict/key[.='UserName']/following-sibling::*[1])")).toBe("alice");
    expect(await xpath(file, "string(/plist/dict/key[.='StandardErrorPath']/following-sibling::*[1])")).toBe("/Library/Logs/ollamats/server.log");
    // the environment as a real XML parser reads it
    const origins = await xpath(file, "string(/plist/dict/key[.='EnvironmentVariables']/following-sibling::dict[1]/key[.='OLLAMA_ORIGINS']/following-sibling::*[1])");
    expect(origins).toBe('http://a.example,"quoted" & <tag> 100%');
    expect(parsePlistEnvironment(launchdPlist(spec))).toEqual(TRICKY_ENV);
  });

  it("fails validation when broken (the check is real)", async () => {
    if (!need("xmllint")) return;
    const dir = await freshDir("plist-bad");
    const file = path.join(dir, "bad.plist");
    await writeFile(file, launchdPlist(systemSpec()).replace("<key>RunAtLoad</key>", "<key>RunAtLoad</key><key>x</key>"));
    expect((await xmllint(file)).code).not.toBe(0);
  });
});

describe("packaged service files (scripts/service)", () => {
  it("are in sync with the generator", async () => {
    for (const f of packagedServiceFiles()) {
      expect(await readFile(path.join(REPO, "scripts/service", f.name), "utf8"), `${f.name}: run npx tsx scripts/service/generate.ts`).toBe(f.text);
      expect(isOurs(f.text)).toBe(false); // install never overwrites what a package shipped
    }
  });

  it("pass systemd-analyze verify and xmllint", async () => {
    const files = packagedServiceFiles();
    if (need("systemd-analyze")) {
      for (const name of ["ollamats.service", "ollamats-user.service"]) {
        const dir = await freshDir("packaged");
        // verify wants the program to exist: point it at node for the check
        const text = files.find((f) => f.name === name)!.text.replace("/usr/bin/ollamats", process.execPath);
        const env = files.find((f) => f.name === "environment.conf")!.text;
        expect(verify(await writeUnit(dir, text, env))).toEqual({ ok: true, output: "" });
      }
    }
    if (need("xmllint")) {
      expect(await xmllint(path.join(REPO, "scripts/service/com.ollamats.server.plist"))).toEqual({ code: 0, out: "" });
    }
  });
});

describe("--env arguments", () => {
  it("sets, removes, copies from the environment, and keeps order", () => {
    const env = { FROM_HERE: "copied" };
    expect(parseEnvArg("OLLAMA_HOST=0.0.0.0", env)).toEqual(["OLLAMA_HOST", "0.0.0.0"]);
    expect(parseEnvArg("OLLAMA_HOST=", env)).toEqual(["OLLAMA_HOST", undefined]);
    expect(parseEnvArg("FROM_HERE", env)).toEqual(["FROM_HERE", "copied"]);
    expect(() => parseEnvArg("NOT_SET", env)).toThrow(/not set in this environment/);
    expect(() => parseEnvArg("1BAD=x", env)).toThrow(/invalid environment variable name/);
    expect(() => parseEnvArg("A=x\ny", env)).toThrow(/newlines/);
    const merged = mergeEnv(
      [
        ["A", "1"],
        ["B", "2"],
      ],
      [
        ["A", "one"],
        ["B", undefined],
        ["C", "3"],
      ],
    );
    expect(merged).toEqual([
      ["A", "one"],
      ["C", "3"],
    ]);
  });
});

// ---------------------------------------------------------------------------------------------

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { ...process.env, OLLAMA_HOST: "127.0.0.1:1", ...env }, timeout: 30_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else out.push(path.relative(dir, p));
    }
  };
  await walk(dir);
  return out.sort();
}

describe("ollamats service (CLI, temporary root)", () => {
  const unitRel = "etc/systemd/system/ollamats.service";
  const dropInRel = "etc/systemd/system/ollamats.service.d/environment.conf";

  it("installs the system-wide systemd service, merges --env on reinstall, uninstalls", async () => {
    const root = await freshDir("cli-system");
    const first = await cli(["service", "install", "--root", root, "--platform", "linux", "--env", "OLLAMA_HOST=127.0.0.1:1", "--env", "OLLAMA_KEEP_ALIVE=10m"]);
    expect(first.code, first.stderr).toBe(0);
    expect(await listFiles(root)).toEqual([dropInRel, unitRel, "etc/sysusers.d/ollamats.conf"].sort());
    const unit = await readFile(path.join(root, unitRel), "utf8");
    expect(unit).toContain(`ExecStart=${process.execPath} --max-semi-space-size=64 ${path.join(REPO, "dist/cli/main.js")} serve`);
    expect((await stat(path.join(root, unitRel))).mode & 0o777).toBe(0o644);
    if (has("systemd-analyze")) expect(verify(path.join(root, unitRel))).toEqual({ ok: true, output: "" });

    const second = await cli(["service", "install", "--root", root, "--platform", "linux", "--env", "OLLAMA_KEEP_ALIVE=", "--env", "OLLAMA_DEBUG", "--env", "OLLAMA_NUM_PARALLEL=2"], {
      OLLAMA_DEBUG: "1",
    });
    expect(second.code, second.stderr).toBe(0);
    expect(parseEnvironmentDropIn(await readFile(path.join(root, dropInRel), "utf8"))).toEqual([
      ["OLLAMA_HOST", "127.0.0.1:1"],
      ["OLLAMA_DEBUG", "1"],
      ["OLLAMA_NUM_PARALLEL", "2"],
    ]);

    // status: installed, and nothing answers at the service's OLLAMA_HOST → 3
    const status = await cli(["service", "status", "--root", root, "--platform", "linux"]);
    expect(status.code).toBe(3);
    expect(status.stdout).toMatch(/^Service: +.*ollamats\.service$/m);
    expect(status.stdout).toMatch(/^ +OLLAMA_NUM_PARALLEL=2$/m);
    expect(status.stdout).toMatch(/^API: +not answering at http:\/\/127\.0\.0\.1:1$/m);

    // a user's own drop-in next to ours survives uninstall
    await writeFile(path.join(root, "etc/systemd/system/ollamats.service.d/override.conf"), "[Service]\nEnvironment=X=1\n");
    const un = await cli(["service", "uninstall", "--root", root, "--platform", "linux"]);
    expect(un.code, un.stderr).toBe(0);
    expect(await listFiles(root)).toEqual(["etc/systemd/system/ollamats.service.d/override.conf"]);
    expect((await cli(["service", "status", "--root", root, "--platform", "linux"])).code).toBe(4);
    // uninstalling again is not an error
    expect((await cli(["service", "uninstall", "--root", root, "--platform", "linux"])).code).toBe(0);
  });

  it("never overwrites or removes a unit it did not write", async () => {
    const root = await freshDir("cli-foreign");
    const unit = path.join(root, unitRel);
    await mkdir(path.dirname(unit), { recursive: true });
    const foreign = "[Unit]\nDescription=someone else's\n[Service]\nExecStart=/bin/true\n";
    await writeFile(unit, foreign);
    const r = await cli(["service", "install", "--root", root, "--platform", "linux"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`Error: ${unit} exists and was not written by ollamats; not overwriting it\n`);
    expect(await readFile(unit, "utf8")).toBe(foreign);
    expect(await listFiles(root)).toEqual([unitRel]); // nothing else written either
    const u = await cli(["service", "uninstall", "--root", root, "--platform", "linux"]);
    expect(u.code).toBe(1);
    expect(u.stderr).toBe(`Error: ${unit} was not written by ollamats; not removing it\n`);
    expect(await readFile(unit, "utf8")).toBe(foreign);
  });

  it("refuses a packaged unit's name and a bad environment value, writing nothing", async () => {
    const root = await freshDir("cli-packaged");
    const r = await cli(["service", "install", "--root", root, "--platform", "linux", "--env", "OLLAMA_KEEP_ALIVE=soon"]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(/^Error: --env: OLLAMA_KEEP_ALIVE: invalid duration "soon"/);
    expect(await listFiles(root)).toEqual([]);
    const vendor = path.join(root, "usr/lib/systemd/system/ollamats.service");
    await mkdir(path.dirname(vendor), { recursive: true });
    await writeFile(vendor, packagedServiceFiles()[0]!.text);
    const p = await cli(["service", "install", "--root", root, "--platform", "linux"]);
    expect(p.code).toBe(1);
    expect(p.stderr).toMatch(/^Error: a packaged unit is installed at \/usr\/lib\/systemd\/system\/ollamats\.service/);
  });

  it("installs a per-user systemd service under ~/.config", async () => {
    const root = await freshDir("cli-user");
    const r = await cli(["service", "install", "--user", "--root", root, "--platform", "linux"], { HOME: "/home/alice", XDG_CONFIG_HOME: "" });
    expect(r.code, r.stderr).toBe(0);
    expect(await listFiles(root)).toEqual(["home/alice/.config/systemd/user/ollamats.service", "home/alice/.config/systemd/user/ollamats.service.d/environment.conf"]);
    expect(r.stdout).toMatch(/systemctl --user daemon-reload && systemctl --user enable --now ollamats/);
  });

  it("installs a LaunchAgent and a LaunchDaemon (macOS layout)", async () => {
    const root = await freshDir("cli-darwin");
    const agent = await cli(["service", "install", "--user", "--root", root, "--platform", "darwin", "--env", "OLLAMA_HOST=127.0.0.1:1"], { HOME: "/Users/alice" });
    expect(agent.code, agent.stderr).toBe(0);
    const plist = path.join(root, "Users/alice/Library/LaunchAgents/com.ollamats.server.plist");
    expect(parsePlistEnvironment(await readFile(plist, "utf8"))).toEqual([["OLLAMA_HOST", "127.0.0.1:1"]]);
    expect((await stat(path.join(root, "Users/alice/Library/Logs/ollamats"))).isDirectory()).toBe(true);
    if (has("xmllint")) expect(await xmllint(plist)).toEqual({ code: 0, out: "" });

    const noUser = await cli(["service", "install", "--root", root, "--platform", "darwin"], { SUDO_USER: "" });
    expect(noUser.code).toBe(1);
    expect(noUser.stderr).toMatch(/^Error: a system-wide LaunchDaemon needs an account to run as: add --run-as USER/);
    const daemon = await cli(["service", "install", "--root", root, "--platform", "darwin", "--run-as", "alice"]);
    expect(daemon.code, daemon.stderr).toBe(0);
    const text = await readFile(path.join(root, "Library/LaunchDaemons/com.ollamats.server.plist"), "utf8");
    expect(text).toMatch(/<key>UserName<\/key>\s*<string>alice<\/string>/);
    const un = await cli(["service", "uninstall", "--user", "--root", root, "--platform", "darwin"], { HOME: "/Users/alice" });
    expect(un.code, un.stderr).toBe(0);
    await expect(stat(plist)).rejects.toThrow();
  });

  it("refuses clearly without the needed privileges", async () => {
    // as an unprivileged account, when this test runs as root and runuser exists
    if (process.getuid?.() === 0 && has("runuser")) {
      const r = spawnSync("runuser", ["-u", "nobody", "--", process.execPath, CLI, "service", "install", "--platform", "linux"], {
        encoding: "utf8",
        cwd: "/",
        timeout: 20_000,
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: "/nonexistent", OLLAMA_HOST: "127.0.0.1:1" },
      });
      expect(r.error, JSON.stringify(r)).toBeUndefined();
      expect(r.status).toBe(1);
      expect(r.stderr).toBe(
        "Error: installing the system-wide service needs root: run 'sudo ollamats service install', or 'ollamats service install --user' for a service of your own\n",
      );
    }
    if (process.getuid?.() === 0) {
      const user = await cli(["service", "install", "--user", "--platform", "linux"]);
      expect(user.code).toBe(1);
      expect(user.stderr).toMatch(/^Error: --user is for the current user's own service manager/);
    }
    // and a clear error when the target directory cannot be written
    const blocker = path.join(await freshDir("blocked"), "a-file");
    await writeFile(blocker, "");
    const r2 = await cli(["service", "install", "--root", path.join(blocker, "root"), "--platform", "linux"]);
    expect(r2.code).toBe(1);
    expect(r2.stderr.trim().split("\n")).toHaveLength(1);
    expect(r2.stderr.startsWith(`Error: cannot write ${path.join(blocker, "root/etc/sysusers.d/ollamats.conf")}: `)).toBe(true);
  });

  it("rejects unknown subcommands and flags on one line", async () => {
    const a = await cli(["service", "frob"]);
    expect(a).toMatchObject({ code: 1, stderr: 'Error: unknown command "frob" for "ollamats service"\n' });
    const b = await cli(["service"]);
    expect(b).toMatchObject({ code: 1, stderr: "Error: requires a subcommand: install, uninstall, status or print\n" });
    const c = await cli(["service", "install", "--bogus"]);
    expect(c).toMatchObject({ code: 1, stderr: "Error: unknown flag: --bogus\n" });
  });
});

describe("service manager calls", () => {
  function fakeContext(root: string, over: Partial<ServiceContext> = {}) {
    const calls: string[] = [];
    const printed: string[] = [];
    const ctx: ServiceContext = {
      platform: "linux",
      scope: "system",
      root,
      runCommands: true,
      systemdRunning: async () => true,
      home: "/home/alice",
      uid: 0,
      env: {},
      node: process.execPath,
      script: "/opt/ollamats/dist/cli/main.js",
      run: async (cmd, args): Promise<CommandResult> => {
        calls.push([cmd, ...args].join(" "));
        return { code: 0, stdout: cmd === "systemctl" && args.includes("is-active") ? "active\n" : "", stderr: "" };
      },
      print: (l) => void printed.push(l),
      probe: async () => "9.9.9",
      ...over,
    };
    return { ctx, calls, printed };
  }

  it("creates the account, reloads, enables and (re)starts; uninstall disables", async () => {
    const root = await freshDir("calls");
    const { ctx, calls, printed } = fakeContext(root);
    await installService(ctx, { env: [], start: true });
    expect(calls).toEqual([
      "systemd-sysusers /etc/sysusers.d/ollamats.conf",
      "systemctl daemon-reload",
      "systemctl enable ollamats",
      "systemctl restart ollamats",
    ]);
    expect(printed.at(-1)).toBe("Started ollamats; logs: journalctl -u ollamats -f");
    calls.length = 0;
    expect(await serviceStatus(ctx, "http://127.0.0.1:11434")).toBe(0);
    expect(printed.at(-1)).toBe("API:         answering at http://127.0.0.1:11434 (version 9.9.9)");
    calls.length = 0;
    await uninstallService(ctx);
    expect(calls).toEqual(["systemctl disable --now ollamats", "systemctl daemon-reload"]);
  });

  it("uses the user manager and launchctl domains", async () => {
    const user = fakeContext(await freshDir("calls-user"), { scope: "user", uid: 1000 });
    await installService(user.ctx, { env: [], start: false });
    expect(user.calls).toEqual(["systemctl --user daemon-reload", "systemctl --user enable ollamats"]);
    const mac = fakeContext(await freshDir("calls-mac"), { platform: "darwin", scope: "user", uid: 501, home: "/Users/a" });
    await installService(mac.ctx, { env: [], start: true });
    expect(mac.calls).toEqual(["launchctl bootout gui/501/com.ollamats.server", "launchctl bootstrap gui/501 /Users/a/Library/LaunchAgents/com.ollamats.server.plist"]);
  });

  it("refuses without root, as root for --user, and without systemd", async () => {
    const root = await freshDir("calls-priv");
    await expect(installService(fakeContext(root, { uid: 1000 }).ctx, { env: [], start: true })).rejects.toThrow(/needs root: run 'sudo ollamats service install'/);
    await expect(uninstallService(fakeContext(root, { uid: 1000 }).ctx)).rejects.toThrow(/removing the system-wide service needs root/);
    await expect(installService(fakeContext(root, { scope: "user" }).ctx, { env: [], start: true })).rejects.toThrow(/without sudo/);
    await expect(installService(fakeContext(root, { systemdRunning: async () => false }).ctx, { env: [], start: true })).rejects.toThrow(/systemd is not running/);
    expect(await listFiles(root)).toEqual([]);
  });

  it("reports a failing systemctl on one line", async () => {
    const root = await freshDir("calls-fail");
    const { ctx } = fakeContext(root, {
      run: async (cmd, args) => (args.includes("restart") ? { code: 1, stdout: "", stderr: "Job for ollamats.service failed.\nSee journalctl\n" } : { code: 0, stdout: "", stderr: "" }),
    });
    await expect(installService(ctx, { env: [], start: true })).rejects.toThrow(/^systemctl restart ollamats failed: Job for ollamats.service failed\.$/);
  });
});

describe("sd_notify readiness", () => {
  it("runs systemd-notify --ready only when NOTIFY_SOCKET is set", async () => {
    const dir = await freshDir("notify");
    const fake = path.join(dir, "fake-notify");
    const out = path.join(dir, "out.txt");
    await writeFile(fake, `#!/bin/sh\necho "$NOTIFY_SOCKET $*" > ${out}\n`, { mode: 0o755 });
    expect(await notifyReadyAsync({ command: fake, env: {} })).toBe(false);
    await expect(readFile(out, "utf8")).rejects.toThrow();
    expect(await notifyReadyAsync({ command: fake, env: { NOTIFY_SOCKET: "/run/x.sock" }, status: "Listening on 127.0.0.1:11434" })).toBe(true);
    expect(await readFile(out, "utf8")).toBe("/run/x.sock --ready --status=Listening on 127.0.0.1:11434\n");
    const errors: string[] = [];
    expect(await notifyReadyAsync({ command: path.join(dir, "missing"), env: { NOTIFY_SOCKET: "/run/x.sock" }, onError: (m) => void errors.push(m) })).toBe(false);
    expect(errors[0]).toMatch(/^could not tell systemd the service is ready/);
  });

  it("sends READY=1 to the notify socket with the real systemd-notify", async () => {
    if (!has("systemd-notify") || !has("python3")) return;
    const dir = await freshDir("notify-real");
    const sock = path.join(dir, "notify.sock");
    // a stand-in for PID 1's notify socket: print each datagram, close passed fds (BARRIER=1)
    const listener = execFile("python3", [
      "-c",
      `import socket,os,array,sys
s=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM); s.bind(sys.argv[1]); s.settimeout(10); print("ready",flush=True)
while True:
  m,anc,_,_=s.recvmsg(4096,socket.CMSG_SPACE(64))
  for l,t,d in anc:
    if t==socket.SCM_RIGHTS:
      a=array.array("i"); a.frombytes(d[:len(d)-len(d)%4]); [os.close(x) for x in a]
  print(repr(m.decode()),flush=True)
  if b"BARRIER=1" in m: break`,
      sock,
    ]);
    // watched from the start: it exits as soon as the barrier arrives, which can be before
    // notifyReadyAsync has seen systemd-notify exit
    const exited = new Promise((r) => listener.once("exit", r));
    let got = "";
    listener.stdout?.on("data", (d: Buffer) => (got += d.toString()));
    while (!got.includes("ready")) {
      expect(listener.exitCode, "the listener exited before binding its socket").toBeNull();
      await new Promise((r) => setTimeout(r, 20));
    }
    const errors: string[] = [];
    const sent = await notifyReadyAsync({ env: { ...process.env, NOTIFY_SOCKET: sock }, status: "up", onError: (m) => void errors.push(m) });
    expect(errors).toEqual([]);
    expect(sent).toBe(true);
    await exited;
    expect(got).toContain("READY=1");
  });
});

describe("graceful stop", () => {
  it("the daemon exits 0 on SIGTERM (what systemd and launchd send)", async () => {
    const d = await startDaemon();
    try {
      const code = new Promise<number | null>((resolve) => d.proc.once("exit", (c) => resolve(c)));
      d.proc.kill("SIGTERM");
      expect(await code).toBe(0);
      expect(d.logs()).toMatch(/level=INFO msg="received SIGTERM, shutting down"/);
    } finally {
      await d.stop();
    }
  });
});
