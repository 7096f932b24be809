import { useEffect, useRef, useState } from "react";
import { errorMessage, trpc } from "../trpc";

type Check = { state: "idle" | "checking" } | { state: "valid" } | { state: "invalid"; message: string };

/**
 * The definition as text, checked as it is typed: the text must parse as
 * JSON (the browser's parser says where not), and the service then checks
 * the definition as a save would (`schemas.check`) and names the first
 * problem. Answers to older text are dropped.
 */
export function useDefinitionCheck(text: string): Check {
  const [check, setCheck] = useState<Check>({ state: "idle" });
  const seq = useRef(0);
  useEffect(() => {
    const n = ++seq.current;
    let definition: unknown;
    try {
      definition = JSON.parse(text);
    } catch (e) {
      setCheck({ state: "invalid", message: `Not JSON yet: ${errorMessage(e)}` });
      return;
    }
    setCheck({ state: "checking" });
    const timer = setTimeout(() => {
      trpc.schemas.check
        .mutate({ definition: definition as Record<string, unknown> })
        .then((r) => n === seq.current && setCheck(r.valid ? { state: "valid" } : { state: "invalid", message: r.message ?? "not valid" }))
        .catch((e) => n === seq.current && setCheck({ state: "invalid", message: errorMessage(e) }));
    }, 200);
    return () => clearTimeout(timer);
  }, [text]);
  return check;
}

export function CheckLine({ check }: { check: Check }) {
  return (
    <p role="status" aria-label="Definition check" className={check.state === "valid" ? "s-completed" : check.state === "invalid" ? "error" : "hint"}>
      {check.state === "valid" ? "Valid: a save would accept this definition." : check.state === "invalid" ? check.message : check.state === "checking" ? "Checking…" : ""}
    </p>
  );
}

/** Reads a chosen file for a JSON body: text when it decodes as UTF-8, else base64. */
export async function sampleOf(file: File): Promise<{ filename: string; text?: string; base64?: string }> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  try {
    return { filename: file.name, text: new TextDecoder("utf-8", { fatal: true }).decode(bytes) };
  } catch {
    let s = "";
    for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    return { filename: file.name, base64: btoa(s) };
  }
}
