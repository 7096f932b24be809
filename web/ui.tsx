import { type InputHTMLAttributes, useId } from "react";
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
