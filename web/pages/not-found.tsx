import { Link } from "../router";

export function NotFound(props: { what?: string }) {
  return (
    <section>
      <h1>Not found</h1>
      <p>{props.what ?? "This page"} does not exist, or it is not in your workspace.</p>
      <Link href="/">Back to the runs</Link>
    </section>
  );
}
