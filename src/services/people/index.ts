/** People: accounts, sessions, memberships, invitations (docs/decisions/people.md). */
export { signUp, logIn } from "./sign-up";
export { authenticateSession, endSession, switchWorkspace, SESSION_COOKIE } from "./sessions";
export { verifyEmail, verifyByOperator, resendVerification } from "./verify";
export { listMembers, invite, acceptInvite, removeMember, revokeInvite, requireAdmin } from "./members";
export type * from "./shapes";
export { WorkspaceIdInput } from "./shapes";
