import { AppError } from "../../domain/errors";

export const MIN_PASSWORD_LENGTH = 10;

/**
 * The minimum strength: at least 10 characters, at least 5 different ones,
 * not the e-mail address or its local part. Length matters more than
 * character classes (NIST SP 800-63B); the rest catches the obvious.
 */
export function checkPassword(password: string, email: string): void {
  const fail = (why: string) => new AppError("invalid_input", `password: ${why}`);
  if (password.length < MIN_PASSWORD_LENGTH) throw fail(`must be at least ${MIN_PASSWORD_LENGTH} characters`);
  if (new Set(password).size < 5) throw fail("must use at least 5 different characters");
  const lower = password.toLowerCase();
  const local = email.toLowerCase().split("@")[0]!;
  if (lower === email.toLowerCase() || (local.length >= 4 && lower.includes(local))) throw fail("must not contain your e-mail address");
}

export function hashPassword(password: string): Promise<string> {
  return Bun.password.hash(password, { algorithm: "argon2id" });
}

/** A hash checked when no account matches, so that a miss costs as long as a wrong password. */
let dummy: Promise<string> | null = null;
export async function verifyPassword(password: string, hash: string | null): Promise<boolean> {
  if (!hash) {
    dummy ??= hashPassword("not a password of anyone");
    await Bun.password.verify(password, await dummy);
    return false;
  }
  return Bun.password.verify(password, hash);
}
