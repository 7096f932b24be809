export { authenticateHostedLogin, findHostedAccount, type HostedAccount, type LoginAttempt, type LoginCredential, type LoginOutcome, type LoginReason } from "./authenticate";
export { ipAllowed } from "./ip-allow";
export { LoginGuard, type LoginPolicy } from "./login-guard";
