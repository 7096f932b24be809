/** People: accounts, sessions, memberships, invitations (docs/decisions/people.md). */
export { signUp, logIn } from "./sign-up";
export { authenticateSession, endSession, switchWorkspace, SESSION_COOKIE } from "./sessions";
export { verifyEmail, verifyByOperator, resendVerification } from "./verify";
export { listMembers, invite, acceptInvite, removeMember, revokeInvite, changeRole, requireAdmin } from "./members";
export { changePassword, listSessions, revokeSession } from "./account";
export type * from "./shapes";
export { WorkspaceIdInput } from "./shapes";
