// Python's datetime.strftime in the C locale, for templates' strftime_now (Llama 3.x prints today's
// date so): English names whatever the machine's locale, local time as Python's datetime.now().
const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
const pad = (n: number, width = 2): string => String(n).padStart(width, "0");

export function pyStrftime(d: Date, format: string): string {
  const dayOfYear = Math.round((Date.UTC(d.getFullYear(), d.getMonth(), d.getDate()) - Date.UTC(d.getFullYear(), 0, 1)) / 86_400_000) + 1;
  const h12 = d.getHours() % 12 || 12;
  const offset = -d.getTimezoneOffset();
  const fields: Record<string, () => string> = {
    a: () => DAYS[d.getDay()]!.slice(0, 3),
    A: () => DAYS[d.getDay()]!,
    b: () => MONTHS[d.getMonth()]!.slice(0, 3),
    h: () => MONTHS[d.getMonth()]!.slice(0, 3),
    B: () => MONTHS[d.getMonth()]!,
    d: () => pad(d.getDate()),
    e: () => String(d.getDate()).padStart(2, " "),
    m: () => pad(d.getMonth() + 1),
    y: () => pad(d.getFullYear() % 100),
    Y: () => String(d.getFullYear()),
    H: () => pad(d.getHours()),
    I: () => pad(h12),
    M: () => pad(d.getMinutes()),
    S: () => pad(d.getSeconds()),
    f: () => pad(d.getMilliseconds() * 1000, 6),
    p: () => (d.getHours() < 12 ? "AM" : "PM"),
    j: () => pad(dayOfYear, 3),
    w: () => String(d.getDay()),
    u: () => String(d.getDay() || 7),
    z: () => `${offset < 0 ? "-" : "+"}${pad(Math.floor(Math.abs(offset) / 60))}${pad(Math.abs(offset) % 60)}`,
    D: () => `${pad(d.getMonth() + 1)}/${pad(d.getDate())}/${pad(d.getFullYear() % 100)}`,
    F: () => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`,
    T: () => `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`,
    "%": () => "%",
  };
  return format.replace(/%(.)/gs, (m, c: string) => fields[c]?.() ?? m);
}
