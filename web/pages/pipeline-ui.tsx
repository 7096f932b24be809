import { type DragEvent, type ReactNode, useId, useState } from "react";

/** A region files can be dropped on, with a file chooser for the keyboard; `name` is its accessible name. */
export function DropZone(props: { name: string; onFiles: (files: FileList | null) => void; children: ReactNode; choose: string; multiple?: boolean }) {
  const [over, setOver] = useState(false);
  const inputId = useId();
  const drop = (e: DragEvent<HTMLElement>) => {
    e.preventDefault();
    setOver(false);
    props.onFiles(e.dataTransfer.files);
  };
  return (
    <section
      className={over ? "dropzone over" : "dropzone"}
      aria-label={props.name}
      onDragOver={(e) => {
        e.preventDefault();
        setOver(true);
      }}
      onDragLeave={() => setOver(false)}
      onDrop={drop}
    >
      <p>{props.children}</p>
      <label htmlFor={inputId} className="button-like">
        {props.choose}
      </label>
      <input id={inputId} type="file" multiple={props.multiple} className="sr-only" onChange={(e) => props.onFiles(e.target.files)} />
    </section>
  );
}

/** A select with its visible label, over `[value, text]` choices. */
export function Choice(props: { label: string; value: string; choices: readonly (readonly [string, string])[]; onChange: (value: string) => void }) {
  const id = useId();
  return (
    <span className="field">
      <label htmlFor={id}>{props.label}</label>
      <select id={id} value={props.value} onChange={(e) => props.onChange(e.target.value)}>
        {props.choices.map(([value, text]) => (
          <option key={value} value={value}>
            {text}
          </option>
        ))}
      </select>
    </span>
  );
}
