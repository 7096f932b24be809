import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { time, timestamps } from "./columns";
import { workspaces } from "./workspaces";

/** A person: work e-mail and an argon2id password hash (Bun.password). */
export const users = sqliteTable("users", {
  id: text("id").primaryKey(),
  email: text("email").notNull().unique(),
  name: text("name").notNull(),
  passwordHash: text("password_hash").notNull(),
  emailVerifiedAt: time("email_verified_at"),
  ...timestamps,
});

/** A person's place in a workspace, with the same roles as API keys. */
export const memberships = sqliteTable(
  "memberships",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id, { onDelete: "cascade" }),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    role: text("role").notNull(),
    ...timestamps,
  },
  (t) => [uniqueIndex("memberships_workspace_user_idx").on(t.workspaceId, t.userId), index("memberships_user_idx").on(t.userId)],
);

/** A server-side session; the cookie carries the token, the row only its SHA-256 digest. */
export const sessions = sqliteTable(
  "sessions",
  {
    id: text("id").primaryKey(),
    tokenHash: text("token_hash").notNull().unique(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    /** The workspace the dashboard works in (the switcher changes it). */
    workspaceId: text("workspace_id"),
    lastSeenAt: time("last_seen_at").notNull(),
    expiresAt: time("expires_at").notNull(),
    revokedAt: time("revoked_at"),
    ...timestamps,
  },
  (t) => [index("sessions_user_idx").on(t.userId)],
);

/** Single-use links: e-mail verification and invitations (digest only). */
export const userTokens = sqliteTable("user_tokens", {
  id: text("id").primaryKey(),
  kind: text("kind").notNull(),
  tokenHash: text("token_hash").notNull().unique(),
  email: text("email").notNull(),
  workspaceId: text("workspace_id").references(() => workspaces.id, { onDelete: "cascade" }),
  role: text("role"),
  expiresAt: time("expires_at").notNull(),
  usedAt: time("used_at"),
  ...timestamps,
});

/** Failed log-ins per account (`acct:<email>`) and per address (`addr:<ip>`). */
export const loginThrottle = sqliteTable("login_throttle", {
  key: text("key").primaryKey(),
  failures: integer("failures").notNull(),
  windowStart: time("window_start").notNull(),
  lockedUntil: time("locked_until"),
});
