import { z } from "zod";
import { Id, Name } from "../shared/shapes";
import { ROLES } from "../keys/shapes";

export const Email = z.email({ error: "must be an e-mail address" }).max(320, "must be at most 320 characters");
/** Checked for strength by `passwordProblem` (./password.ts); the shape only bounds it. */
export const Password = z.string().max(256, "must be at most 256 characters");

export const SignUpInput = z.strictObject({
  workspaceName: Name,
  name: Name,
  email: Email,
  password: Password,
});
export type SignUpInput = z.input<typeof SignUpInput>;

export const LogInInput = z.strictObject({ email: Email, password: z.string().min(1, "must not be empty").max(256) });
export type LogInInput = z.input<typeof LogInInput>;

export const TokenInput = z.strictObject({ token: z.string().min(1, "must not be empty").max(200) });

export const InviteInput = z.strictObject({
  email: Email,
  role: z.enum(ROLES, { error: `must be one of ${ROLES.join(", ")}` }).default("member"),
});
export type InviteInput = z.input<typeof InviteInput>;

/** Accepting an invitation: a person who has no account yet gives a name and a password. */
export const AcceptInviteInput = z.strictObject({
  token: z.string().min(1, "must not be empty").max(200),
  name: Name.optional(),
  password: Password.optional(),
});

export const MemberIdInput = z.strictObject({ userId: Id });

export const ChangeRoleInput = z.strictObject({
  userId: Id,
  role: z.enum(ROLES, { error: `must be one of ${ROLES.join(", ")}` }),
});
export type ChangeRoleInput = z.input<typeof ChangeRoleInput>;

export const ChangePasswordInput = z.strictObject({
  currentPassword: z.string().min(1, "must not be empty").max(256),
  newPassword: Password,
});
export type ChangePasswordInput = z.input<typeof ChangePasswordInput>;

export const SessionIdInput = z.strictObject({ id: Id });

/** One of a person's open sessions (never its token). */
export interface SessionListItem {
  id: string;
  workspaceId: string | null;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
  /** The session this request came with. */
  current: boolean;
}
export const WorkspaceIdInput = z.strictObject({ workspaceId: Id });

export type Role = (typeof ROLES)[number];

export interface PersonView {
  id: string;
  email: string;
  name: string;
  emailVerified: boolean;
}

export interface MembershipView {
  workspaceId: string;
  workspaceName: string;
  role: Role;
}

export interface MemberView {
  userId: string;
  email: string;
  name: string;
  role: Role;
  joinedAt: Date;
}

export interface InvitationView {
  id: string;
  email: string;
  role: Role;
  expiresAt: Date;
}

/** What a session's owner sees of themselves: who, where they work now, and their other workspaces. */
export interface SessionView {
  person: PersonView;
  workspaceId: string;
  role: Role;
  workspaces: MembershipView[];
}

/** A session just opened: the token goes into the cookie, never into a body. */
export interface OpenedSession {
  token: string;
  expiresAt: Date;
  view: SessionView;
}
