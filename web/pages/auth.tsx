import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useEffect } from "react";
import { Link, navigate, useLocation } from "../router";
import { trpc } from "../trpc";
import { ErrorText, Field } from "../ui";

const form = (e: FormEvent<HTMLFormElement>) => {
  e.preventDefault();
  return Object.fromEntries(new FormData(e.currentTarget)) as Record<string, string>;
};

function useLoggedIn() {
  const qc = useQueryClient();
  return () => {
    // What was asked for before the log-in (refused then) is asked again.
    qc.resetQueries();
    // A page asked for before logging in (a run's link) is shown once logged in.
    const here = window.location.pathname;
    if (["/login", "/signup", "/invite", "/verify"].includes(here)) navigate("/", { replace: true });
  };
}

export function SignUp() {
  const done = useLoggedIn();
  const signUp = useMutation({ mutationFn: (v: Record<string, string>) => trpc.account.signUp.mutate(v as never), onSuccess: done });
  return (
    <main className="auth">
      <h1>Create a workspace</h1>
      <form onSubmit={(e) => signUp.mutate(form(e))}>
        <Field label="Workspace name" name="workspaceName" required autoComplete="organization" />
        <Field label="Your name" name="name" required autoComplete="name" />
        <Field label="Work e-mail" name="email" type="email" required autoComplete="email" />
        <Field label="Password" name="password" type="password" required minLength={10} autoComplete="new-password" />
        <p className="hint">At least 10 characters. Personal e-mail providers are not accepted: use your company's address.</p>
        <ErrorText error={signUp.error} />
        <button type="submit" disabled={signUp.isPending}>
          Sign up
        </button>
      </form>
      <p>
        Already have an account? <Link href="/login">Log in</Link>
      </p>
    </main>
  );
}

export function LogIn() {
  const done = useLoggedIn();
  const logIn = useMutation({ mutationFn: (v: Record<string, string>) => trpc.account.logIn.mutate(v as never), onSuccess: done });
  return (
    <main className="auth">
      <h1>Log in</h1>
      <form onSubmit={(e) => logIn.mutate(form(e))}>
        <Field label="E-mail" name="email" type="email" required autoComplete="email" />
        <Field label="Password" name="password" type="password" required autoComplete="current-password" />
        <ErrorText error={logIn.error} />
        <button type="submit" disabled={logIn.isPending}>
          Log in
        </button>
      </form>
      <p>
        New here? <Link href="/signup">Create a workspace</Link>
      </p>
    </main>
  );
}

export function VerifyEmail() {
  const { query } = useLocation();
  const verify = useMutation({ mutationFn: (token: string) => trpc.account.verifyEmail.mutate({ token }) });
  const token = query.get("token") ?? "";
  // biome-ignore lint/correctness/useExhaustiveDependencies: once per link
  useEffect(() => {
    if (token) verify.mutate(token);
  }, [token]);
  return (
    <main className="auth">
      <h1>Confirm your e-mail address</h1>
      {verify.isSuccess && <p role="status">{verify.data.email} is confirmed.</p>}
      <ErrorText error={verify.error} />
      <Link href="/">Go to the dashboard</Link>
    </main>
  );
}

export function AcceptInvite() {
  const { query } = useLocation();
  const done = useLoggedIn();
  const accept = useMutation({
    mutationFn: (v: Record<string, string>) =>
      trpc.account.acceptInvite.mutate({ token: query.get("token") ?? "", password: v.password, name: v.name || undefined }),
    onSuccess: done,
  });
  return (
    <main className="auth">
      <h1>Join a workspace</h1>
      <form onSubmit={(e) => accept.mutate(form(e))}>
        <Field label="Your name (new accounts only)" name="name" autoComplete="name" />
        <Field label="Password (your current one if you have an account)" name="password" type="password" required autoComplete="new-password" />
        <ErrorText error={accept.error} />
        <button type="submit" disabled={accept.isPending}>
          Join
        </button>
      </form>
    </main>
  );
}
