// The service files shipped for packagers under scripts/service/ (regenerate them with
// `npx tsx scripts/service/generate.ts`; a test checks they are in sync). They run the `ollamats`
// command from the package's bin link and carry no "Managed by ollamats" marker, so
// `ollamats service install` never overwrites or removes them.
import { launchdPlist } from "./launchd.js";
import { systemdEnvironmentDropIn, systemdUnit, sysusersEntry } from "./systemd.js";

export interface PackagedFile {
  /** File name under scripts/service/. */
  name: string;
  /** Where a package installs it. */
  installTo: string;
  text: string;
}

export function packagedServiceFiles(): PackagedFile[] {
  return [
    {
      name: "ollamats.service",
      installTo: "/usr/lib/systemd/system/ollamats.service",
      text: systemdUnit({ scope: "system", command: ["/usr/bin/ollamats", "serve"], env: [], packaged: true }),
    },
    {
      name: "ollamats-user.service",
      installTo: "/usr/lib/systemd/user/ollamats.service",
      text: systemdUnit({ scope: "user", command: ["/usr/bin/ollamats", "serve"], env: [], packaged: true }),
    },
    {
      name: "environment.conf",
      installTo: "/etc/systemd/system/ollamats.service.d/environment.conf",
      text: systemdEnvironmentDropIn([], true),
    },
    {
      name: "ollamats.sysusers",
      installTo: "/usr/lib/sysusers.d/ollamats.conf",
      text: sysusersEntry(true),
    },
    {
      name: "com.ollamats.server.plist",
      installTo: "~/Library/LaunchAgents/com.ollamats.server.plist",
      text: launchdPlist({
        scope: "user",
        command: ["/usr/local/bin/ollamats", "serve"],
        env: [],
        packaged: true,
        logFile: "/usr/local/var/log/ollamats.log",
      }),
    },
  ];
}
