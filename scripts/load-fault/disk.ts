import { Checks } from "./report.js";
export async function runDisk(_o: { log: (s: string) => void }): Promise<Checks> {
  return new Checks("disk");
}
