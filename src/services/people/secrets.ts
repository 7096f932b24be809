import { randomBytes } from "node:crypto";
import { digest } from "../keys/token";

/** A random single-use or session token (256 bits, URL-safe) and the digest that is stored in its place. */
export function newSecret(): { token: string; hash: string } {
  const token = randomBytes(32).toString("base64url");
  return { token, hash: digest(token) };
}

export const hashOf = (token: string) => digest(token);
