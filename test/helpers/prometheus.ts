/**
 * A strict reader of the Prometheus text exposition format (0.0.4): every
 * line must be a HELP, a TYPE or a sample of a family declared before it,
 * names and labels must be well formed, label values properly escaped,
 * values numbers, histogram buckets cumulative and ending at +Inf = _count.
 * Anything else throws, naming the line.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: "counter" | "gauge" | "histogram" | "summary" | "untyped";
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const SUFFIXES: Record<Family["type"], string[]> = {
  counter: [""],
  gauge: [""],
  untyped: [""],
  histogram: ["_bucket", "_sum", "_count"],
  summary: ["", "_sum", "_count"],
};

function parseValue(text: string, line: number): number {
  if (/^[+-]?inf$/i.test(text)) return text.startsWith("-") ? -Infinity : Infinity;
  if (/^nan$/i.test(text)) return Number.NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) throw new Error(`line ${line}: '${text}' is not a number`);
  return Number(text);
}

function parseLabels(text: string, line: number): { labels: Record<string, string>; rest: string } {
  const labels: Record<string, string> = {};
  let i = 1;
  while (text[i] !== "}") {
    const eq = text.indexOf("=", i);
    const name = text.slice(i, eq);
    if (eq < 0 || !LABEL.test(name)) throw new Error(`line ${line}: bad label name '${name}'`);
    if (name in labels) throw new Error(`line ${line}: label '${name}' twice`);
    if (text[eq + 1] !== '"') throw new Error(`line ${line}: label '${name}' value is not quoted`);
    let j = eq + 2;
    let value = "";
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === "\\") {
        const next = text[++j];
        if (next === "n") value += "\n";
        else if (next === "\\" || next === '"') value += next;
        else throw new Error(`line ${line}: bad escape '\\${next}'`);
      } else value += text[j];
    }
    if (j >= text.length) throw new Error(`line ${line}: unterminated label value`);
    labels[name] = value;
    i = j + 1;
    if (text[i] === ",") i++;
    else if (text[i] !== "}") throw new Error(`line ${line}: expected ',' or '}' after label '${name}'`);
  }
  return { labels, rest: text.slice(i + 1) };
}

export function parsePrometheusText(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const helps = new Map<string, string>();
  const lines = text.split("\n");
  if (lines.at(-1) !== "") throw new Error("the exposition must end with a newline");
  lines.forEach((raw, index) => {
    const n = index + 1;
    if (raw === "") return;
    if (raw.startsWith("#")) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(raw);
      if (!m) return; // a plain comment
      const [, kind, name, rest] = m;
      if (!NAME.test(name!)) throw new Error(`line ${n}: bad metric name '${name}'`);
      if (kind === "HELP") helps.set(name!, rest!);
      else {
        if (!(rest! in SUFFIXES)) throw new Error(`line ${n}: unknown type '${rest}'`);
        if (families.has(name!)) throw new Error(`line ${n}: TYPE of '${name}' given twice`);
        families.set(name!, { name: name!, type: rest as Family["type"], help: helps.get(name!) ?? "", samples: [] });
      }
      return;
    }
    const nameEnd = raw.search(/[{ ]/);
    const name = raw.slice(0, nameEnd);
    if (!NAME.test(name)) throw new Error(`line ${n}: bad metric name '${name}'`);
    let rest = raw.slice(nameEnd);
    let labels: Record<string, string> = {};
    if (rest.startsWith("{")) ({ labels, rest } = parseLabels(rest, n));
    const parts = rest.trim().split(" ");
    if (!rest.startsWith(" ") || parts.length < 1 || parts.length > 2) throw new Error(`line ${n}: expected ' value [timestamp]'`);
    const value = parseValue(parts[0]!, n);
    const family = [...families.values()].find((f) => SUFFIXES[f.type].some((s) => f.name + s === name));
    if (!family) throw new Error(`line ${n}: sample '${name}' has no TYPE before it`);
    family.samples.push({ name, labels, value });
  });
  for (const f of families.values()) if (f.type === "histogram") checkHistogram(f);
  return families;
}

function checkHistogram(f: Family): void {
  const series = new Map<string, Sample[]>();
  const key = (l: Record<string, string>) => JSON.stringify(Object.entries(l).filter(([k]) => k !== "le").sort());
  for (const s of f.samples) if (s.name.endsWith("_bucket")) series.set(key(s.labels), [...(series.get(key(s.labels)) ?? []), s]);
  for (const [k, buckets] of series) {
    let last = -Infinity;
    for (const b of buckets) {
      if (b.value < last) throw new Error(`${f.name}${k}: buckets are not cumulative`);
      last = b.value;
    }
    if (buckets.at(-1)!.labels.le !== "+Inf") throw new Error(`${f.name}${k}: the last bucket is not +Inf`);
    const count = f.samples.find((s) => s.name === `${f.name}_count` && key(s.labels) === k);
    if (count?.value !== last) throw new Error(`${f.name}${k}: +Inf bucket ${last} != _count ${count?.value}`);
  }
}

/** The sum of the samples of `name` whose labels include `labels` (0 when there are none). */
export function sampleValue(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const f of families.values()) {
    for (const s of f.samples) {
      if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) sum += s.value;
    }
  }
  return sum;
}
