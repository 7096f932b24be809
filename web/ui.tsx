import { type InputHTMLAttributes, type ReactNode, type TextareaHTMLAttributes, useId, useState } from "react";
import { errorMessage } from "./trpc";

/** Every field has a visible label tied to it (tests find fields by label). */
export function Field(props: InputHTMLAttributes<HTMLInputElement> & { label: string }) {
  const id = useId();
  const { label, ...rest } = props;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input id={id} {...rest} />
    </div>
  );
}

export function ErrorText(props: { error: unknown }) {
  if (!props.error) return null;
  return (
    <p className="error" role="alert">
      {errorMessage(props.error)}
    </p>
  );
}

export function Progress(props: { value: number; label: string }) {
  const pct = Math.max(0, Math.min(100, Math.round(props.value * 100)));
  return (
    <progress className="bar" max={100} value={pct} aria-label={props.label}>
      {pct}%
    </progress>
  );
}

/** A multi-line field with its visible label. */
export function TextArea(props: TextareaHTMLAttributes<HTMLTextAreaElement> & { label: string }) {
  const id = useId();
  const { label, ...rest } = props;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <textarea id={id} {...rest} />
    </div>
  );
}

/** Copies `value` to the clipboard; says so, or says to select the text where the browser refuses. */
export function CopyButton(props: { value: string; label: string }) {
  const [state, setState] = useState<"" | "Copied" | "Select and copy it by hand">("");
  const copy = () =>
    navigator.clipboard
      .writeText(props.value)
      .then(() => setState("Copied"))
      .catch(() => setState("Select and copy it by hand"));
  return (
    <span className="copy">
      <button type="button" className="small" onClick={copy} aria-label={`Copy ${props.label}`}>
        Copy
      </button>
      <span role="status" className="hint">
        {state}
      </span>
    </span>
  );
}

/** A value to hand on (host, port, username, secret) with its copy button. */
export function CopyValue(props: { label: string; value: string }) {
  return (
    <>
      <dt>{props.label}</dt>
      <dd>
        <code aria-label={props.label}>{props.value}</code> <CopyButton value={props.value} label={props.label} />
      </dd>
    </>
  );
}

/** A table with a caption for screen readers and one header row of column names; scrolls sideways on narrow screens. */
export function Table(props: { caption: string; columns: string[]; children: ReactNode }) {
  return (
    <div className="table-wrap">
      <table>
        <caption className="sr-only">{props.caption}</caption>
        <thead>
          <tr>
            {props.columns.map((c) => (
              <th key={c} scope="col">
                {c}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}
