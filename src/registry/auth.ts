// Registry authentication as Ollama does it (server/auth.go, auth/auth.go): a `WWW-Authenticate:
// Bearer realm=..,service=..,scope=..` challenge is answered by fetching a token from the realm.
// When the realm is on the registry's own host the request is signed with the ed25519 identity in
// ~/.ollama/id_ed25519 (OpenSSH format, created on first use as `ollama serve` does); a realm on
// another host (Docker Hub's auth.docker.io and the like) gets an anonymous token request, so the
// identity is never sent to a third party.
import { makeDirs } from "../fs/make-dirs.js";
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, sign, verify, type KeyObject } from "node:crypto";
import { promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";

export interface Challenge {
  realm: string;
  service: string;
  scope: string;
}

/**
 * Parse `Bearer realm="https://x/token",service="x",scope="repository:a/b:pull"`. Values may be
 * quoted (with embedded quotes, as Ollama's getValue tolerates) or bare. null when not Bearer.
 */
export function parseChallenge(header: string | undefined): Challenge | null {
  if (!header) return null;
  const m = /^\s*Bearer\s+(.*)$/is.exec(header);
  if (!m) return null;
  const rest = m[1] as string;
  const value = (key: string): string => {
    const re = new RegExp(`(?:^|[\\s,])${key}=`, "i");
    const km = re.exec(rest);
    if (!km) return "";
    let i = km.index + km[0].length;
    if (rest[i] !== '"') {
      const end = rest.indexOf(",", i);
      return (end < 0 ? rest.slice(i) : rest.slice(i, end)).trim();
    }
    i++;
    let j = i;
    // a quote ends the value only when followed by a comma or the end (Ollama's getValue)
    while (j < rest.length && !(rest[j] === '"' && (j + 1 >= rest.length || rest[j + 1] === ","))) j++;
    return rest.slice(i, j);
  };
  return { realm: value("realm"), service: value("service"), scope: value("scope") };
}

/** base64url nonce of `n` random bytes (auth.NewNonce). */
export function newNonce(n = 16): string {
  return randomBytes(n).toString("base64url");
}

// ---------------------------------------------------------------------------------------------
// OpenSSH ed25519 keys

const SSH_MAGIC = "openssh-key-v1\0";
const KEY_TYPE = "ssh-ed25519";

class SshReader {
  private pos = 0;
  constructor(private readonly buf: Buffer) {}
  u32(): number {
    if (this.pos + 4 > this.buf.length) throw new Error("malformed OpenSSH key");
    const v = this.buf.readUInt32BE(this.pos);
    this.pos += 4;
    return v;
  }
  bytes(): Buffer {
    const n = this.u32();
    if (this.pos + n > this.buf.length) throw new Error("malformed OpenSSH key");
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
  string(): string {
    return this.bytes().toString("latin1");
  }
}

const sshString = (b: Buffer | string): Buffer => {
  const data = typeof b === "string" ? Buffer.from(b, "latin1") : b;
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  return Buffer.concat([len, data]);
};
const u32be = (v: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v >>> 0);
  return b;
};

export interface Identity {
  privateKey: KeyObject;
  /** 32-byte raw ed25519 public key. */
  publicRaw: Buffer;
}

/** The SSH wire blob of the public key (what `ssh-ed25519 <base64>` carries). */
export function publicKeyBlob(id: Identity): Buffer {
  return Buffer.concat([sshString(KEY_TYPE), sshString(id.publicRaw)]);
}

/** `ssh-ed25519 AAAA...` (ssh.MarshalAuthorizedKey without the newline). */
export function authorizedKey(id: Identity): string {
  return `${KEY_TYPE} ${publicKeyBlob(id).toString("base64")}`;
}

/** Parse an unencrypted OpenSSH ed25519 private key (PEM `OPENSSH PRIVATE KEY`). */
export function parseOpenSshPrivateKey(pem: string): Identity {
  const m = /-----BEGIN OPENSSH PRIVATE KEY-----([\s\S]*?)-----END OPENSSH PRIVATE KEY-----/.exec(pem);
  if (!m) throw new Error("not an OpenSSH private key");
  const raw = Buffer.from((m[1] as string).replace(/\s+/g, ""), "base64");
  if (raw.subarray(0, SSH_MAGIC.length).toString("latin1") !== SSH_MAGIC) throw new Error("not an OpenSSH private key");
  const r = new SshReader(raw.subarray(SSH_MAGIC.length));
  const cipher = r.string();
  const kdf = r.string();
  r.bytes(); // kdf options
  if (cipher !== "none" || kdf !== "none") throw new Error("encrypted OpenSSH private keys are not supported");
  if (r.u32() !== 1) throw new Error("OpenSSH key file must hold exactly one key");
  r.bytes(); // public key blob
  const priv = new SshReader(r.bytes());
  if (priv.u32() !== priv.u32()) throw new Error("malformed OpenSSH key (check bytes differ)");
  const type = priv.string();
  if (type !== KEY_TYPE) throw new Error(`unsupported key type ${type} (only ${KEY_TYPE})`);
  const pub = priv.bytes();
  const secret = priv.bytes(); // seed (32) + public (32)
  if (pub.length !== 32 || secret.length !== 64) throw new Error("malformed ed25519 key");
  const privateKey = createPrivateKey({
    key: { kty: "OKP", crv: "Ed25519", d: secret.subarray(0, 32).toString("base64url"), x: pub.toString("base64url") },
    format: "jwk",
  });
  return { privateKey, publicRaw: Buffer.from(pub) };
}

/** Serialize an identity as an unencrypted OpenSSH private key file (as ssh.MarshalPrivateKey). */
export function formatOpenSshPrivateKey(id: Identity, comment = ""): string {
  const jwk = id.privateKey.export({ format: "jwk" }) as { d: string };
  const seed = Buffer.from(jwk.d, "base64url");
  const check = randomBytes(4).readUInt32BE();
  let priv = Buffer.concat([
    u32be(check),
    u32be(check),
    sshString(KEY_TYPE),
    sshString(id.publicRaw),
    sshString(Buffer.concat([seed, id.publicRaw])),
    sshString(comment),
  ]);
  const pad: number[] = [];
  for (let i = 1; (priv.length + pad.length) % 8 !== 0; i++) pad.push(i);
  priv = Buffer.concat([priv, Buffer.from(pad)]);
  const body = Buffer.concat([
    Buffer.from(SSH_MAGIC, "latin1"),
    sshString("none"),
    sshString("none"),
    sshString(""),
    u32be(1),
    sshString(publicKeyBlob(id)),
    sshString(priv),
  ]);
  const b64 = body.toString("base64").replace(/.{1,70}/g, "$&\n");
  return `-----BEGIN OPENSSH PRIVATE KEY-----\n${b64}-----END OPENSSH PRIVATE KEY-----\n`;
}

export function generateIdentity(): Identity {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const x = (publicKey.export({ format: "jwk" }) as { x: string }).x;
  return { privateKey, publicRaw: Buffer.from(x, "base64url") };
}

/** ~/.ollama/id_ed25519 (HOME as os.homedir() reads it). */
export function identityPath(home: string = os.homedir()): string {
  return path.join(home, ".ollama", "id_ed25519");
}

/**
 * Load the identity, creating it (0600, with its `.pub`) when absent, as Ollama's
 * initializeKeypair does at server start.
 */
export async function ensureIdentity(file: string = identityPath()): Promise<Identity> {
  try {
    return parseOpenSshPrivateKey(await fs.readFile(file, "utf8"));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
  const id = generateIdentity();
  await makeDirs(path.dirname(file));
  try {
    await fs.writeFile(file, formatOpenSshPrivateKey(id), { mode: 0o600, flag: "wx" });
    await fs.writeFile(`${file}.pub`, `${authorizedKey(id)}\n`, { mode: 0o644 });
  } catch (e) {
    // another process created it first: use theirs
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return parseOpenSshPrivateKey(await fs.readFile(file, "utf8"));
    throw e;
  }
  return id;
}

/** `<base64 public key blob>:<base64 signature>` over `data` (auth.Sign). */
export function signWith(id: Identity, data: Buffer | string): string {
  const sig = sign(null, typeof data === "string" ? Buffer.from(data) : data, id.privateKey);
  return `${publicKeyBlob(id).toString("base64")}:${sig.toString("base64")}`;
}

/** The text Ollama signs for a token request: `GET,<url>,<base64(hex sha256(""))>`. */
export function tokenRequestSigningText(url: string): string {
  const emptyHex = createHash("sha256").update("").digest("hex");
  return `GET,${url},${Buffer.from(emptyHex).toString("base64")}`;
}

/** Verify a signature made by signWith (used by the tests' fake token server). */
export function verifySignature(authorization: string, data: string): boolean {
  const [pubB64, sigB64] = authorization.split(":");
  if (!pubB64 || !sigB64) return false;
  try {
    const r = new SshReader(Buffer.from(pubB64, "base64"));
    if (r.string() !== KEY_TYPE) return false;
    const raw = r.bytes();
    const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw.toString("base64url") }, format: "jwk" });
    return verify(null, Buffer.from(data), key, Buffer.from(sigB64, "base64"));
  } catch {
    return false;
  }
}

/** Build the token URL for a challenge: realm + service, scope(s), ts, nonce (registryChallenge.URL). */
export function challengeUrl(ch: Challenge, now: Date = new Date()): URL {
  const u = new URL(ch.realm);
  if (ch.service) u.searchParams.append("service", ch.service);
  for (const s of ch.scope.split(" ")) if (s) u.searchParams.append("scope", s);
  u.searchParams.append("ts", String(Math.floor(now.getTime() / 1000)));
  u.searchParams.append("nonce", newNonce());
  u.searchParams.sort(); // Go's url.Values.Encode sorts by key
  return u;
}
