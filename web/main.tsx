import "./styles.css";
import { QueryClient, QueryClientProvider, useQuery, useQueryClient } from "@tanstack/react-query";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { Layout } from "./layout";
import { AcceptInvite, LogIn, SignUp, VerifyEmail } from "./pages/auth";
import { Keys } from "./pages/keys";
import { Members } from "./pages/members";
import { NotFound } from "./pages/not-found";
import { RunPage } from "./pages/run";
import { firstRunsPage, RunsConsole } from "./pages/runs";
import { Settings } from "./pages/settings";
import { Upload } from "./pages/upload";
import { pipelinePage } from "./pages/pipelines";
import { navigate, useLocation } from "./router";
import { setupPage } from "./pages/setup-routes";
import { errorCode, trpc } from "./trpc";

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      // A refused session is not retried: the log-in page shows instead.
      retry: (count, e) => !["unauthorized", "forbidden", "not_found", "invalid_input"].includes(errorCode(e) ?? "") && count < 2,
      refetchOnWindowFocus: false,
    },
  },
});

const sessionQuery = { queryKey: ["me"], queryFn: () => trpc.account.session.query() };

// On the console's path, its first page is asked for with the session, in the same batched request.
queryClient.prefetchQuery(sessionQuery);
if (window.location.pathname === "/" || window.location.pathname === "/runs") queryClient.prefetchQuery(firstRunsPage);

function App() {
  const { path } = useLocation();
  const qc = useQueryClient();
  const me = useQuery(sessionQuery);
  if (path === "/verify") return <VerifyEmail />;
  if (path === "/invite") return <AcceptInvite />;
  if (me.isPending) return <p className="loading">Loading…</p>;
  const session = me.data;
  if (!session) {
    if (path === "/signup") return <SignUp />;
    return <LogIn />;
  }
  if (path === "/login" || path === "/signup") {
    navigate("/", { replace: true });
    return null;
  }
  const run = /^\/runs\/([^/]+)$/.exec(path);
  let page = <NotFound />;
  if (path === "/" || path === "/runs") page = <RunsConsole />;
  else if (run) page = <RunPage id={decodeURIComponent(run[1]!)} />;
  else if (path === "/upload") page = <Upload />;
  else if (path === "/members") page = <Members session={session} />;
  else if (path === "/keys") page = <Keys session={session} />;
  else if (path === "/settings") page = <Settings session={session} />;
  else page = setupPage(path) ?? pipelinePage(path) ?? page;
  return (
    <Layout session={session} onSessionChange={() => qc.invalidateQueries()}>
      {page}
    </Layout>
  );
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <App />
    </QueryClientProvider>
  </StrictMode>,
);
