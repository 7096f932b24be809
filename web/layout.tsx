import { useMutation, useQueryClient } from "@tanstack/react-query";
import type { ReactNode } from "react";
import { Link, navigate, useLocation } from "./router";
import { trpc } from "./trpc";
import type { Session } from "./types";

const NAV = [
  ["/", "Runs"],
  ["/upload", "Upload"],
  ["/members", "Members"],
  ["/keys", "API keys"],
  ["/settings", "Settings"],
  ["/setup/connections", "Connections"],
  ["/setup/schemas", "Schemas"],
  ["/setup/pipelines", "Pipelines"],
  ["/setup/documents", "Documents"],
  ["/setup/webhooks", "Webhooks"],
  ["/setup/notifications", "Notifications"],
  ["/setup/outbound", "Outbound"],
] as const;

export function Layout(props: { session: Session; children: ReactNode; onSessionChange: () => void }) {
  const { path } = useLocation();
  const qc = useQueryClient();
  const logOut = useMutation({
    mutationFn: () => trpc.account.logOut.mutate(),
    onSuccess: () => {
      qc.clear();
      navigate("/login");
      qc.invalidateQueries({ queryKey: ["me"] });
    },
  });
  const switchTo = useMutation({
    mutationFn: (workspaceId: string) => trpc.account.switchWorkspace.mutate({ workspaceId }),
    onSuccess: () => {
      navigate("/");
      props.onSessionChange();
    },
  });
  const { session } = props;
  return (
    <div className="shell">
      <header className="top">
        <span className="brand">File Pipeline</span>
        {session.workspaces.length > 1 ? (
          <label className="switcher">
            Workspace
            <select value={session.workspaceId} onChange={(e) => switchTo.mutate(e.target.value)}>
              {session.workspaces.map((w) => (
                <option key={w.workspaceId} value={w.workspaceId}>
                  {w.workspaceName}
                </option>
              ))}
            </select>
          </label>
        ) : (
          <span className="workspace">{session.workspaces[0]?.workspaceName}</span>
        )}
        <span className="who">
          {session.person.name} ({session.role})
        </span>
        <button type="button" onClick={() => logOut.mutate()}>
          Log out
        </button>
      </header>
      <nav aria-label="Main">
        {NAV.map(([href, label]) => (
          <Link key={href} href={href} aria-current={path === href || (href === "/" && path.startsWith("/runs")) || (href.startsWith("/setup/") && path.startsWith(`${href}/`)) ? "page" : undefined}>
            {label}
          </Link>
        ))}
      </nav>
      {!session.person.emailVerified && <VerifyBanner />}
      <main>{props.children}</main>
    </div>
  );
}

function VerifyBanner() {
  const resend = useMutation({ mutationFn: () => trpc.account.resendVerification.mutate() });
  return (
    <p className="banner" role="status">
      Your e-mail address is not verified yet.{" "}
      {resend.data ? (
        resend.data.mailed ? "A new link is on its way." : "This service sends no mail: ask your operator to verify it (user:verify)."
      ) : (
        <button type="button" onClick={() => resend.mutate()}>
          Send the link again
        </button>
      )}
    </p>
  );
}
